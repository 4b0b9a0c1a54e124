import pino, { type Logger } from "pino";

/**
 * Structured logs: pretty lines for a person at a terminal, JSON lines when piped (so a
 * supervisor or CI can parse them). Logs go to stderr; stdout is for command output.
 */
export function createLogger(name: string, options: { level?: string; pretty?: boolean } = {}): Logger {
  const level = options.level ?? process.env.A3R_LOG_LEVEL ?? "info";
  const pretty = options.pretty ?? Boolean(process.stderr.isTTY);
  if (pretty) {
    return pino({
      name,
      level,
      transport: { target: "pino-pretty", options: { destination: 2, colorize: true, translateTime: "HH:MM:ss" } },
    });
  }
  return pino({ name, level }, pino.destination(2));
}

export type { Logger };
