import { shellQuote } from "../../core/shell-quote.ts";
import type { LlmAllowance } from "./launcher.ts";

/**
 * The command line that runs one blueprint on a host. `a3r` is the host's configured
 * command (e.g. `node /opt/a3r/bin/a3r.js`), kept as written so it may hold several words.
 * An LLM allowance becomes `--llm-tokens` / `--llm-usd` (held over the run's own ledger).
 */
export function workerRunCommand(a3r: string, blueprintFile: string, resultDir: string, allowance?: LlmAllowance): string {
  const limits = [
    ...(allowance?.tokens === undefined ? [] : [`--llm-tokens ${Math.max(1, Math.floor(allowance.tokens))}`]),
    ...(allowance?.usd === undefined ? [] : [`--llm-usd ${Math.max(1e-6, Math.floor(allowance.usd * 1e6) / 1e6)}`]),
  ];
  return [`${a3r} worker run ${shellQuote(blueprintFile)} --result-dir ${shellQuote(resultDir)}`, ...limits].join(" ");
}

/** Environment assignments written inline, because ssh servers drop most `env` requests. */
export function inlineEnvironment(variables: Record<string, string>): string {
  return Object.entries(variables)
    .map(([name, value]) => `${name}=${shellQuote(value)}`)
    .join(" ");
}
