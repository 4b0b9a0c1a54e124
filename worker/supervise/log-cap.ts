import { execFile } from "node:child_process";
import { open, rename, rm } from "node:fs/promises";

/**
 * Keeps a run's log file under a cap while the run writes it (`worker.log_cap`): once the
 * file holds more than the cap, the middle the worker has already read is cut out, the
 * first quarter and the newest output stay, and a marker line where the cut is says how
 * many bytes were dropped.
 *
 * Why the worker cuts the file, not a capper between the trainer and the file: the wrapper
 * shell (core/process-group.ts) gives the trainer the log as its stdout and stderr, opened
 * O_APPEND, so every write lands at the current end whatever the worker does to the file;
 * the exit status, the process group, TERM/KILL and re-attach stay exactly as they are; and
 * only the worker knows what it has read, so nothing is dropped before its metrics are
 * parsed (a capper in a pipe would drop a flood's metric lines the worker had not reached,
 * and die with the group on KILL). The cut must not race the writer: copying the tail down
 * and truncating would lose what the trainer appends between the two, so the kernel does it
 * under the file's lock:
 *
 * - `fallocate --collapse-range` (ext4, xfs): the cut bytes leave the file and what follows
 *   moves down; the file really shrinks. Block-aligned, hence the aligned head.
 * - where that is refused (tmpfs, btrfs, NFS), `fallocate --punch-hole`: the cut bytes'
 *   blocks are freed, so the disk is bounded, but the file keeps its length and reads
 *   zeros there (a sparse file).
 * - where neither works, the log is not capped; the caller reports it once.
 *
 * A punched log is written again without its hole when the attempt has ended (every
 * process of it stopped, so nobody writes it any more): `compactPunchedLog`.
 *
 * A trainer that writes faster than the worker reads (a `yes`-speed flood) would still fill
 * the disk: once the unread output is more than twice the cap, the cut takes unread bytes
 * too (counted apart: `unreadBytes`), and the reader goes on from the kept newest output.
 *
 * Limit: while no worker watches (between a crash and the re-attach) nobody cuts.
 */
export type CapMethod = "collapse" | "punch";

export interface LogCapState {
  /** Bytes at the start that are always kept (block-aligned); the marker is their last line. */
  headBytes: number;
  /** The method that worked last, null before the first cut, "none" when neither works. */
  method: CapMethod | "none" | null;
  /** Punch: the end of the hole so far (the file keeps its offsets). */
  holeEnd: number;
  /** Bytes cut so far (the marker's overwritten bytes included). */
  droppedBytes: number;
  /** Of those, bytes cut before the worker read them (a writer faster than the reader). */
  unreadBytes: number;
  cuts: number;
}

const markerWidth = 160;

export function newLogCapState(capBytes: number, blockBytes = 4096): LogCapState {
  const head = Math.max(blockBytes, Math.floor(capBytes / 4 / blockBytes) * blockBytes);
  return { headBytes: head, method: null, holeEnd: head, droppedBytes: 0, unreadBytes: 0, cuts: 0 };
}

/**
 * Where to cut a file of `size` bytes read up to `readTo`: from the end of the head (or of
 * the hole) to a block-aligned point that is read already and leaves at least half the cap
 * after it; undefined while the file holds less than the cap or too little can be cut. With
 * more than twice the cap unread, the point may be beyond what was read.
 */
export function planCut(state: LogCapState, capBytes: number, size: number, readTo: number, blockBytes = 4096): { from: number; to: number } | undefined {
  const punched = state.method === "punch" ? state.holeEnd - state.headBytes : 0;
  if (size - punched <= capBytes) return undefined;
  const from = state.method === "punch" ? state.holeEnd : state.headBytes;
  const keepFrom = size - Math.floor(capBytes / 2);
  const to = Math.floor((size - readTo > 2 * capBytes ? keepFrom : Math.min(readTo, keepFrom)) / blockBytes) * blockBytes;
  if (to - from < blockBytes) return undefined;
  return { from, to };
}

function fallocate(args: string[]): Promise<boolean> {
  return new Promise((resolve) => execFile("fallocate", args, { timeout: 30_000 }, (error) => resolve(!error)));
}

/**
 * Cuts [from, to) out of the file (collapse, else punch) and rewrites the marker. Returns how
 * many bytes the reader's offset moves down (collapse) or 0 (punch, or nothing cut).
 */
export async function cutLogMiddle(path: string, state: LogCapState, cut: { from: number; to: number }, capLabel: string): Promise<number> {
  const range = ["--offset", String(cut.from), "--length", String(cut.to - cut.from), path];
  let method: CapMethod | "none" = "none";
  if (state.method !== "punch" && (await fallocate(["--collapse-range", ...range]))) method = "collapse";
  else if (await fallocate(["--punch-hole", ...range])) method = "punch";
  if (method === "none") {
    state.method = "none";
    return 0;
  }
  if (state.cuts === 0) state.droppedBytes += markerWidth;
  state.method = method;
  state.cuts += 1;
  state.droppedBytes += cut.to - cut.from;
  if (method === "punch") state.holeEnd = cut.to;
  await writeMarker(path, state, capLabel);
  return method === "collapse" ? cut.to - cut.from : 0;
}

/** The marker line, always the same width, at the end of the kept head (bytes already read). */
async function writeMarker(path: string, state: LogCapState, capLabel: string): Promise<void> {
  const text = `[a3r] log capped (worker.log_cap = ${capLabel}): ${state.droppedBytes} bytes of output were cut here; the first part and the newest output are kept`;
  const line = Buffer.from(`\n${text.padEnd(markerWidth - 2, " ").slice(0, markerWidth - 2)}\n`);
  const handle = await open(path, "r+");
  try {
    await handle.write(line, 0, line.length, state.headBytes - markerWidth);
  } finally {
    await handle.close();
  }
}

/**
 * After the attempt (nobody writes the file any more): a punched log is written again as its
 * head and what follows the hole, and replaces the sparse one, so readers and copies get the
 * capped size, not the zeros. Nothing to do for a collapsed log.
 */
export async function compactPunchedLog(path: string, state: LogCapState): Promise<void> {
  if (state.method !== "punch") return;
  const source = await open(path, "r");
  const partial = `${path}.compact`;
  const target = await open(partial, "w");
  try {
    const { size } = await source.stat();
    const buffer = Buffer.allocUnsafe(1 << 20);
    for (const [from, to] of [
      [0, state.headBytes],
      [state.holeEnd, size],
    ] as const) {
      for (let position = from; position < to; ) {
        const { bytesRead } = await source.read(buffer, 0, Math.min(buffer.length, to - position), position);
        if (bytesRead === 0) break;
        await target.write(buffer, 0, bytesRead);
        position += bytesRead;
      }
    }
  } finally {
    await source.close();
    await target.close();
  }
  await rename(partial, path).catch(async () => {
    await rm(partial, { force: true });
  });
  state.method = "collapse";
  state.holeEnd = state.headBytes;
}
