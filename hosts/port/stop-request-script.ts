import { stopRequestFileName, stopRequestSchema, type StopRequest } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import { shellQuote } from "../../core/shell-quote.ts";

/**
 * The one shell command that puts a stop request into a remote result directory (ssh and
 * slurm hosts): the request is data (single-quoted, never interpreted), written beside the
 * target and renamed over it, so the worker never reads half of one. It prints `written`,
 * `finished` (finish.flag is there: too late) or `none` (no such result directory).
 */
export function stopRequestScript(resultDir: string, request: StopRequest): string {
  const content = shellQuote(`${JSON.stringify(stopRequestSchema.parse(request))}\n`);
  return [
    `cd ${shellQuote(resultDir)} 2>/dev/null || { echo none; exit 0; }`,
    `[ -f finish.flag ] && { echo finished; exit 0; }`,
    `printf %s ${content} > .${stopRequestFileName}.tmp && mv -f .${stopRequestFileName}.tmp ${stopRequestFileName} && echo written`,
  ].join("; ");
}

/** The script's answer: true when written, false when there was nothing to stop; REMOTE_COMMAND_FAILED otherwise. */
export function stopRequestAnswer(host: string, result: { stdout: string; stderr: string }): boolean {
  const answer = result.stdout.trim();
  if (answer === "written") return true;
  if (answer === "none" || answer === "finished") return false;
  throw new A3rError("REMOTE_COMMAND_FAILED", `writing stop-request.json on ${host} failed: ${(result.stderr.trim() || answer || "no output").slice(0, 300)}`, {
    hint: "check that the run's result folder on the host is writable",
  });
}
