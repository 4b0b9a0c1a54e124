import type { Command } from "commander";

export function registerBlueprintCommands(program: Command): void {
  program.command("blueprint").description("create, validate and show experiment blueprints");
}
