/**
 * What a benchmark returns. Every claim is a ratio measured against a baseline taken in the
 * same run on the same machine, never an absolute time compared with a constant.
 */
export interface BenchRow {
  /** What was measured, e.g. "p50 added latency (ms)". */
  name: string;
  value: number;
  unit?: string;
  /** The goal as people state it, e.g. "<= 2", and whether this run met it. */
  goal?: string;
  met?: boolean;
}

export interface BenchReport {
  title: string;
  rows: BenchRow[];
  notes?: string[];
}

export interface Benchmark {
  title: string;
  run(): Promise<BenchReport>;
}
