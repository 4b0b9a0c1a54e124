import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";

/**
 * Small helpers for node:http handlers. A failed request is an HttpError carrying the
 * status and a message that says why; the router turns it into JSON (OpenAI's error shape
 * under /v1, `{success: false, error}` elsewhere).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = errorTypeOf(status),
  ) {
    super(message);
    this.name = "HttpError";
  }
}

function errorTypeOf(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** Reads the body up to `limitBytes` (413 past it, without buffering the rest). */
export function readBody(request: IncomingMessage, limitBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers["content-length"] ?? "0");
    if (declared > limitBytes) {
      request.resume();
      reject(new HttpError(413, `request body of ${declared} bytes exceeds limits.max_request_body_bytes (${limitBytes})`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    request.on("data", (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limitBytes) {
        failed = true;
        chunks.length = 0;
        reject(new HttpError(413, `request body exceeds limits.max_request_body_bytes (${limitBytes})`));
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => {
      if (!failed) resolve(Buffer.concat(chunks).toString("utf8"));
    });
    request.on("error", (error) => {
      if (!failed) reject(error);
    });
  });
}

/**
 * Parses a JSON body and validates it; 400 naming the field on failure. `accepts`, a hand
 * check of the same schema (engines/port/json-shape.ts), lets a body it vouches for skip zod.
 */
export function parseBody<T extends z.ZodType>(text: string, schema: T, endpoint: string, accepts?: (value: unknown) => value is z.output<T>): z.output<T> {
  let value: unknown;
  try {
    value = text.trim() === "" ? {} : JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `${endpoint}: body is not valid JSON (${(error as Error).message})`);
  }
  if (accepts?.(value)) return value;
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = issue.path.length > 0 ? issue.path.join(".") : "(body)";
    throw new HttpError(400, `${endpoint}: invalid field "${field}": ${issue.message}`);
  }
  return result.data;
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  response.end(text);
}

export function sendText(response: ServerResponse, status: number, text: string, contentType: string): void {
  response.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(text) });
  response.end(text);
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1]?.trim();
}
