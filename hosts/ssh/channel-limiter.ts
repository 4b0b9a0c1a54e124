/**
 * At most `limit` tasks at once, the rest wait in order. OpenSSH refuses an 11th session
 * on one connection (MaxSessions 10), so an ssh connection opens at most 8 channels and
 * queues the others instead of failing them.
 */
export class ChannelLimiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  /** The most tasks that ran at the same time, for tests. */
  peak = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`channel limit must be a whole number >= 1, got ${limit}`);
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active += 1;
    this.peak = Math.max(this.peak, this.active);
    try {
      return await task();
    } finally {
      this.active -= 1;
      this.waiting.shift()?.();
    }
  }

  get inUse(): number {
    return this.active;
  }
}
