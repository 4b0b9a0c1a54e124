import type { Command } from "commander";

export function registerAuditCommand(program: Command): void {
  program.command("audit").description("audit blueprints, result directories and campaign folders");
}
