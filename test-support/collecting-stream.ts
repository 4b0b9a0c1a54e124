import { Writable } from "node:stream";

/** A real writable stream that keeps what was written, chunk by chunk (a stand-in for stderr). */
export class CollectingStream extends Writable {
  readonly chunks: string[] = [];
  columns?: number;
  rows?: number;

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks.push(chunk.toString());
    callback();
  }

  get text(): string {
    return this.chunks.join("");
  }
}
