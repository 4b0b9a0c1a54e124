import { printable } from "../core/printable-text.ts";
import { redactSecrets, redactValue } from "../core/redact.ts";
import { writeFileAtomic } from "../core/atomic-file.ts";
import { A3rError } from "../core/errors.ts";
import { assertTransition, initialRunState, isTerminalRunState, type RunState } from "./run-status.ts";
import { newRunStatus, parseRunStatus, readRunStatus, type RunStatus } from "./status-file.ts";
import { acquireLease, releaseLease, withLease, writeRenewedLease, type LeaseHandle, type LeaseOptions } from "./lease.ts";
import { resultDirPaths, type ResultDirPaths } from "./result-dir-paths.ts";
import { appendMetricsLine, type MetricsRecord, type MetricsRecordInput } from "./metrics-log.ts";
import { appendEventLine, type CampaignEvent, type EventEvidence } from "./event-log.ts";
import { appendAttempt, type AttemptEntry } from "./attempts-log.ts";
import { pathExists } from "../core/path-exists.ts";
import { readFile, rm, stat } from "node:fs/promises";

/**
 * The only way to write a result directory: every write goes through the run's lease
 * (fencing), status changes go through the state machine, and finish.flag comes last.
 *
 * Typical life, from the worker:
 * ```ts
 * const run = await ResultDirWriter.open(dir, `${host}:${process.pid}`, { ttlMs: 120_000 });
 * await run.writeStatus({ state: "queued", host });       // a fresh run starts queued
 * await run.writeStatus({ state: "preparing" });
 * await run.writeStatus({ state: "running", attempt: 1, pid, pgid, startedAt });
 * await run.heartbeat({ step: 120, lastMetrics: { reward_mean: 0.5 } }); // renews the lease
 * await run.writeStatus({ state: "succeeded" });
 * await run.writeResult(markdown);
 * await run.finish();                                     // finish.flag = "succeeded"
 * await run.release();
 * ```
 *
 * Left out: what the states mean for the process (the worker launches and kills), and
 * syncing to the leader's machine (hosts/ copies the folder).
 */
export type StatusChange = Partial<RunStatus> & { state?: RunState };

export interface ResultDirWriterOptions extends LeaseOptions {
  ttlMs: number;
  /** Told about every foreign write the writer undid (it is also an event in events.jsonl). */
  onForeignWrite?: (write: ForeignWrite) => void;
}

/**
 * A write to a file this writer owns (status.json, finish.flag, metrics.jsonl, events.jsonl,
 * attempts.md, result.md) by someone else, usually the training program writing into its
 * own result directory. The writer undoes it: the status it wrote last is put back, a
 * finish.flag it did not write is removed (a reader trusts finish.flag), the other files
 * get back the content it wrote (lines appended by someone else are cut off, a file it
 * never wrote is removed), and `result-dir.foreign-write` is appended to events.jsonl.
 */
export interface ForeignWrite {
  file: "status.json" | "finish.flag" | OwnedRecordFile;
  /** What was found, in words (never the whole foreign content). */
  found: string;
  action: string;
}

/** The worker's records besides status.json and finish.flag: guarded by their content. */
export type OwnedRecordFile = "metrics.jsonl" | "events.jsonl" | "attempts.md" | "result.md";
const ownedRecordFiles: readonly OwnedRecordFile[] = ["metrics.jsonl", "events.jsonl", "attempts.md", "result.md"];

/** What this writer knows of one of its records: the bytes it wrote (or found at open), with the size and mtime it left. */
interface OwnRecord {
  /** undefined: the file did not exist. Chunks, so an append costs its own bytes only. */
  chunks: Buffer[] | undefined;
  size: number;
  mtimeMs: number;
}

export class ResultDirWriter {
  readonly paths: ResultDirPaths;
  private readonly ownRecords = new Map<OwnedRecordFile, OwnRecord>();

  /** status.json exactly as this writer last wrote (or, at open, found) it; undefined = unknown. */
  private ownStatusText: string | undefined;
  private wroteFinishFlag = false;

  private constructor(
    readonly lease: LeaseHandle,
    private readonly options: ResultDirWriterOptions,
  ) {
    this.paths = resultDirPaths(lease.dir);
  }

  /** Acquires the run's lease (LEASE_HELD when another live owner has it). */
  static async open(dir: string, owner: string, options: ResultDirWriterOptions): Promise<ResultDirWriter> {
    const lease = await acquireLease(dir, owner, options.ttlMs, options);
    const writer = new ResultDirWriter(lease, options);
    await writer.adoptStatus();
    for (const file of ownedRecordFiles) await writer.rememberRecord(file);
    return writer;
  }

  private recordPath(file: OwnedRecordFile): string {
    return `${this.dir}/${file}`;
  }

  /** Takes the record's current bytes as this writer's (after its own whole-file write, or at open). */
  private async rememberRecord(file: OwnedRecordFile): Promise<void> {
    const path = this.recordPath(file);
    const info = await stat(path).catch(() => undefined);
    if (info === undefined) {
      this.ownRecords.set(file, { chunks: undefined, size: -1, mtimeMs: 0 });
      return;
    }
    this.ownRecords.set(file, { chunks: [await readFile(path)], size: info.size, mtimeMs: info.mtimeMs });
  }

  /** The records whose size or mtime is not what this writer left (two stats each; no reads). */
  private async touchedRecords(): Promise<OwnedRecordFile[]> {
    const touched: OwnedRecordFile[] = [];
    for (const file of ownedRecordFiles) {
      const known = this.ownRecords.get(file);
      if (known === undefined) continue;
      const info = await stat(this.recordPath(file)).catch(() => undefined);
      const same = info === undefined ? known.chunks === undefined : known.chunks !== undefined && info.size === known.size && info.mtimeMs === known.mtimeMs;
      if (!same) touched.push(file);
    }
    return touched;
  }

  /** Inside the lock: puts back the bytes this writer wrote into each record someone else changed. */
  private async reclaimRecords(): Promise<ForeignWrite[]> {
    const found: ForeignWrite[] = [];
    for (const file of await this.touchedRecords()) {
      const path = this.recordPath(file);
      const known = this.ownRecords.get(file)!;
      const current = await readFile(path).catch(() => undefined);
      const ours = known.chunks === undefined ? undefined : Buffer.concat(known.chunks);
      if (ours === undefined) {
        await rm(path, { force: true });
        found.push({ file, found: `${file} appeared (${current?.length ?? 0} bytes) before the worker wrote it`, action: "removed it" });
      } else if (current === undefined) {
        await writeFileAtomic(path, ours);
        found.push({ file, found: `${file} was deleted`, action: "restored the worker's records" });
      } else if (current.length > ours.length && current.subarray(0, ours.length).equals(ours)) {
        const firstLine = printable(current.subarray(ours.length).toString("utf8").trim().split("\n")[0] ?? "").slice(0, 80);
        await writeFileAtomic(path, ours);
        found.push({ file, found: `${current.length - ours.length} bytes were appended to ${file} ("${firstLine}")`, action: "cut them off" });
      } else if (!current.equals(ours)) {
        await writeFileAtomic(path, ours);
        found.push({
          file,
          found: `${file} was overwritten (${current.length} bytes; the worker's had ${ours.length})`,
          action: "restored the worker's records",
        });
      }
      await this.rememberRecord(file);
    }
    return found;
  }

  /** Takes a valid status.json found at open as the baseline later foreign writes are told from. */
  private async adoptStatus(): Promise<void> {
    const text = await readFile(this.paths.status, "utf8").catch(() => undefined);
    if (text !== undefined && parseRunStatus(text, this.paths.status).status !== undefined) this.ownStatusText = text;
  }

  /**
   * Checks the files only this writer may write and undoes foreign writes (see ForeignWrite).
   * Cheap when nothing happened (two reads, no lock); a supervisor calls it every poll.
   */
  async guardOwnedFiles(): Promise<ForeignWrite[]> {
    const text = await readFile(this.paths.status, "utf8").catch(() => undefined);
    const flag = !this.wroteFinishFlag && (await pathExists(this.paths.finishFlag));
    const records = (await this.touchedRecords()).length > 0;
    if (!flag && !records && (this.ownStatusText === undefined || text === this.ownStatusText)) return [];
    return withLease(this.lease, () => this.reclaimOwnedFiles(), this.options);
  }

  /** Inside the lock: restores status.json and the records, removes a foreign finish.flag; reports each. */
  private async reclaimOwnedFiles(): Promise<ForeignWrite[]> {
    const found: ForeignWrite[] = await this.reclaimRecords();
    const text = await readFile(this.paths.status, "utf8").catch(() => undefined);
    if (this.ownStatusText !== undefined && text !== this.ownStatusText) {
      const parsed = text === undefined ? undefined : parseRunStatus(text, this.paths.status);
      const what =
        text === undefined
          ? "status.json was deleted"
          : parsed?.status === undefined
            ? `status.json was overwritten with an invalid one (${parsed?.problems[0]?.message ?? "unreadable"})`
            : `status.json was overwritten (state ${parsed.status.state})`;
      await writeFileAtomic(this.paths.status, this.ownStatusText);
      found.push({ file: "status.json", found: what, action: "restored the worker's last status" });
    }
    if (!this.wroteFinishFlag && (await pathExists(this.paths.finishFlag))) {
      const own = this.ownStatusText === undefined ? undefined : parseRunStatus(this.ownStatusText, this.paths.status).status;
      // A run this writer knows to be finished keeps its flag: that one is final, not foreign.
      if (own === undefined || !isTerminalRunState(own.state)) {
        const flag = (await readFile(this.paths.finishFlag, "utf8").catch(() => "")).trim().slice(0, 40);
        await rm(this.paths.finishFlag, { force: true });
        found.push({
          file: "finish.flag",
          found: `finish.flag appeared ("${printable(flag)}") while the run is ${own?.state ?? "not finished"}`,
          action: "removed it",
        });
      }
    }
    for (const write of found) {
      const { bytes } = await appendEventLine(
        this.paths.events,
        "result-dir.foreign-write",
        { file: write.file, found: write.found, action: write.action },
        this.now(),
      );
      await this.rememberAppend("events.jsonl", bytes);
      this.options.onForeignWrite?.(write);
    }
    return found;
  }

  /** A writer for a lease acquired elsewhere (its token is checked on every write). */
  static fromLease(lease: LeaseHandle, options: ResultDirWriterOptions): ResultDirWriter {
    return new ResultDirWriter(lease, options);
  }

  get dir(): string {
    return this.lease.dir;
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  /** Writes status.json: a change of state must be legal; same-state updates always are. */
  writeStatus(change: StatusChange): Promise<RunStatus> {
    return withLease(this.lease, () => this.writeStatusLocked(change), this.options);
  }

  /** Records liveness (and progress) and renews the lease in the same locked step. */
  heartbeat(progress: { step?: number | null; lastMetrics?: Record<string, number> | null } = {}): Promise<RunStatus> {
    return withLease(
      this.lease,
      async (lease) => {
        const now = this.now();
        const status = await this.writeStatusLocked({ ...progress, heartbeatAt: now.toISOString() });
        await writeRenewedLease(this.dir, lease, this.options.ttlMs, now);
        return status;
      },
      this.options,
    );
  }

  private async writeStatusLocked(change: StatusChange): Promise<RunStatus> {
    await this.reclaimOwnedFiles();
    if (await pathExists(this.paths.finishFlag)) {
      throw new A3rError("STATUS_TRANSITION_ILLEGAL", `run ${this.dir} has finished (finish.flag exists); its status is final`, { where: this.paths.status });
    }
    const current = await readRunStatus(this.paths.status);
    if (current.exists && current.status === undefined) {
      const first = current.problems[0];
      throw new A3rError("SCHEMA_INVALID", `cannot update status.json: ${first?.message ?? "it is invalid"}`, {
        where: `${this.paths.status}:${first?.line ?? 1}`,
        hint: "status.json is written only by a3r; repair the field or restore it from events.jsonl",
      });
    }
    let next: RunStatus;
    if (current.status === undefined) {
      const state = change.state ?? initialRunState;
      if (state !== initialRunState) assertTransition(initialRunState, state);
      next = newRunStatus({ ...change, state });
    } else {
      next = { ...current.status, ...change };
      if (next.state !== current.status.state) assertTransition(current.status.state, next.state);
    }
    // Reasons quote logs and commands: status.json is written redacted, like every file here.
    const text = `${JSON.stringify(redactValue(next), null, 2)}\n`;
    await writeFileAtomic(this.paths.status, text);
    this.ownStatusText = text;
    return next;
  }

  async appendMetrics(input: MetricsRecordInput): Promise<MetricsRecord> {
    return (await this.appendRecord("metrics.jsonl", () => appendMetricsLine(this.paths.metrics, input, this.now()))).record;
  }

  async appendEvent(kind: string, evidence: EventEvidence = {}): Promise<CampaignEvent> {
    return (await this.appendRecord("events.jsonl", () => appendEventLine(this.paths.events, kind, evidence, this.now()))).event;
  }

  async appendAttempt(entry: AttemptEntry): Promise<void> {
    await this.appendRecord("attempts.md", async () => ({ bytes: await appendAttempt(this.paths.attempts, { time: this.now(), ...entry }) }));
  }

  /**
   * An append to one of the records: what someone else wrote there is undone first, and the
   * bytes this append wrote (never whatever the file grew by) are remembered as ours, so a
   * foreign append racing ours, before or after it, is still told apart and undone.
   */
  private appendRecord<T extends { bytes: Buffer }>(file: OwnedRecordFile, append: () => Promise<T>): Promise<T> {
    return withLease(
      this.lease,
      async () => {
        if ((await this.touchedRecords()).includes(file)) await this.reclaimOwnedFiles();
        const result = await append();
        await this.rememberAppend(file, result.bytes);
        return result;
      },
      this.options,
    );
  }

  /** Adds the bytes this writer just appended to what it knows of the record; a file of any other size stays "touched". */
  private async rememberAppend(file: OwnedRecordFile, bytes: Buffer): Promise<void> {
    const known = this.ownRecords.get(file);
    if (known === undefined) return; // not guarded (a writer from fromLease never read the records)
    const size = Math.max(known.size, 0) + bytes.length;
    const info = await stat(this.recordPath(file)).catch(() => undefined);
    // mtime -1 never matches: a file that grew by more than our bytes is checked on the next guard.
    this.ownRecords.set(file, { chunks: [...(known.chunks ?? []), bytes], size, mtimeMs: info?.size === size ? info.mtimeMs : -1 });
  }

  /**
   * The blueprint as executed, after the worker's adaptations, redacted: this copy is the
   * record of what ran, never run itself (the worker runs the blueprint file it was given).
   */
  writeBlueprint(markdown: string): Promise<void> {
    return this.writeFileFenced(this.paths.blueprint, redactSecrets(markdown));
  }

  writeResult(markdown: string): Promise<void> {
    return withLease(
      this.lease,
      async () => {
        await writeFileAtomic(this.paths.result, printable(redactSecrets(markdown)));
        await this.rememberRecord("result.md");
      },
      this.options,
    );
  }

  writeCurves(svg: string): Promise<void> {
    return this.writeFileFenced(this.paths.curves, svg);
  }

  private writeFileFenced(path: string, content: string): Promise<void> {
    return withLease(this.lease, () => writeFileAtomic(path, content), this.options);
  }

  /** Writes finish.flag (the final state) last; RUN_NOT_FINISHED unless status is terminal. */
  finish(): Promise<RunState> {
    return withLease(
      this.lease,
      async () => {
        await this.reclaimOwnedFiles();
        const current = await readRunStatus(this.paths.status);
        const state = current.status?.state;
        if (state === undefined || !isTerminalRunState(state)) {
          throw new A3rError("RUN_NOT_FINISHED", `cannot write finish.flag for ${this.dir}: status is ${state ?? "missing"}, not a terminal state`, {
            where: this.paths.status,
            hint: "move the status to a terminal state (succeeded, failed, timed_out, cancelled, refused, stopped_early) first; finish.flag is written last",
          });
        }
        await writeFileAtomic(this.paths.finishFlag, `${state}\n`);
        this.wroteFinishFlag = true;
        return state;
      },
      this.options,
    );
  }

  release(): Promise<boolean> {
    return releaseLease(this.lease, this.options);
  }
}
