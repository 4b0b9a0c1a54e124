import pino from "pino";

/** The few logging calls the server makes; pino's Logger satisfies it. */
export interface SwarmLogger {
  debug(object: object, message?: string): void;
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}

/** JSON lines on stderr (stdout carries the "ready" line a supervisor waits for). */
export function createSwarmLogger(level = process.env.A3R_LOG_LEVEL ?? "info"): SwarmLogger {
  return pino({ name: "swarm", level }, pino.destination(2));
}

export const silentLogger: SwarmLogger = { debug() {}, info() {}, warn() {}, error() {} };
