import { open } from "node:fs/promises";

/**
 * Follows a growing log file by polling its size, like `tail -F` without the process:
 * returns complete lines only (a partial last line waits for its newline), keeps a
 * bounded tail for the failure classifier, and starts from a saved offset after a worker
 * restart so lines are neither lost nor read twice.
 */
export class LogFollower {
  private offset: number;
  private partial = "";
  private readonly tail: string[] = [];
  private readonly tailLimit: number;

  constructor(
    private readonly path: string,
    options: { offset?: number; tailLines?: number } = {},
  ) {
    this.offset = options.offset ?? 0;
    this.tailLimit = options.tailLines ?? 200;
  }

  get position(): number {
    return this.offset;
  }

  /** The last lines seen, newest last. */
  recentText(): string {
    return [...this.tail, ...(this.partial ? [this.partial] : [])].join("\n");
  }

  /** Reads what was appended since the last call; returns the new complete lines. */
  async poll(maxBytes = 1 << 20): Promise<string[]> {
    let handle;
    try {
      handle = await open(this.path, "r");
    } catch {
      return [];
    }
    try {
      const { size } = await handle.stat();
      if (size < this.offset) {
        // Truncated or replaced: start over rather than miss what is there now.
        this.offset = 0;
        this.partial = "";
      }
      if (size === this.offset) return [];
      const length = Math.min(size - this.offset, maxBytes);
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, this.offset);
      this.offset += bytesRead;
      const text = this.partial + buffer.subarray(0, bytesRead).toString("utf8");
      const lines = text.split("\n");
      this.partial = lines.pop() ?? "";
      for (const line of lines) {
        this.tail.push(line);
        if (this.tail.length > this.tailLimit) this.tail.shift();
      }
      return lines;
    } finally {
      await handle.close();
    }
  }
}
