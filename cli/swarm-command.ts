import type { Command } from "commander";

export function registerSwarmCommands(program: Command): void {
  program.command("swarm").description("serve, watch and drive swarm training runs");
}
