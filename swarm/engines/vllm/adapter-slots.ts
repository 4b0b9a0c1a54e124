import { EngineError } from "../port/engine-error.ts";

/** One POST to the inference server's origin: its status and body text (connection failures throw EngineError). */
export type AdapterPost = (path: string, body: Record<string, string>) => Promise<{ status: number; text: string }>;

/**
 * The LoRA adapters an inference server holds, by name: the one requests go to, and the
 * ones a sync replaced whose unload has not been confirmed yet.
 *
 * A sync loads the new adapter under a fresh name (servers refuse a name in use), switches
 * requests to it, then unloads the previous one: vLLM runs with `--max-loras 2`, so both are
 * on the GPU while requests still running on the old one finish. An unload that is not
 * answered 2xx (or 404: not loaded, which is the goal) leaves that name *stale*; it is
 * unloaded again before the next load, so names never pile up in the server.
 */
export class AdapterSlots {
  private serving: { name: string; path: string } | undefined;
  private stale: string[] = [];
  private loads = 0;
  /** Why the last unload that failed did (for the log and the step's warning). */
  lastUnloadFailure: string | undefined;

  constructor(private readonly post: AdapterPost) {}

  /** The adapter requests go to (undefined: the base model). */
  get current(): { name: string; path: string } | undefined {
    return this.serving;
  }

  /** Names whose unload is still owed. */
  get staleNames(): readonly string[] {
    return this.stale;
  }

  /** A fresh server process holds no adapter: nothing is serving and nothing is owed. */
  forgetAll(): void {
    this.serving = undefined;
    this.stale = [];
  }

  /**
   * Loads `path` as `<baseName>-<n>`, calls `switchTo` with that name once the server holds
   * it, then unloads the one it replaced. A refused load throws (the previous adapter keeps
   * serving); a failed unload does not: the name is owed and tried again at the next load.
   */
  async load(baseName: string, path: string, switchTo: (name: string) => void): Promise<string> {
    await this.unloadStale();
    const name = `${baseName}-${++this.loads}`;
    const loaded = await this.post("/v1/load_lora_adapter", { lora_name: name, lora_path: path });
    if (loaded.status < 200 || loaded.status >= 300) {
      throw new EngineError(
        "ENGINE_UPSTREAM_REJECTED",
        `loading adapter ${path} answered ${loaded.status}: ${loaded.text.slice(0, 300)}`,
        "the previous adapter keeps serving; see logs/inference-server.log",
      );
    }
    const previous = this.serving;
    this.serving = { name, path };
    switchTo(name);
    if (previous && !(await this.unload(previous.name))) this.stale.push(previous.name);
    return name;
  }

  private async unloadStale(): Promise<void> {
    const owed = this.stale;
    this.stale = [];
    for (const name of owed) if (!(await this.unload(name))) this.stale.push(name);
  }

  /** True once the server no longer holds `name` (unloaded now, or unknown to it: 404). */
  private async unload(name: string): Promise<boolean> {
    try {
      const answer = await this.post("/v1/unload_lora_adapter", { lora_name: name });
      if ((answer.status >= 200 && answer.status < 300) || answer.status === 404) return true;
      this.lastUnloadFailure = `unloading adapter ${name} answered ${answer.status}: ${answer.text.slice(0, 200)}`;
    } catch (error) {
      this.lastUnloadFailure = `unloading adapter ${name} failed: ${error instanceof Error ? error.message : String(error)}`;
    }
    return false;
  }
}
