import { formatDuration } from "../core/duration.ts";
import type { Finding, RecordProblem } from "./finding.ts";
import { isActiveRunState, isTerminalRunState } from "./run-status.ts";
import { readResultDir, type ResultDirSnapshot } from "./result-dir-reader.ts";

/**
 * Checks that a result directory tells one consistent story: finish.flag agrees with
 * status.json, a finished run has its result, the records parse, steps only go forward
 * within an attempt, and a live run has a recent heartbeat.
 *
 * Left out: whether the numbers are good (the leader's analysis judges that) and the
 * blueprint's own content (blueprints/ audits it).
 */
export interface ResultDirAuditOptions {
  /** The moment "now" for heartbeat age; defaults to the clock. */
  now?: Date;
  /** A live run whose last heartbeat is older than this is reported; default 10 minutes. */
  heartbeatMaxAgeMs?: number;
}

export const defaultHeartbeatMaxAgeMs = 10 * 60_000;

export async function auditResultDir(dir: string, options: ResultDirAuditOptions = {}): Promise<Finding[]> {
  return auditResultDirSnapshot(await readResultDir(dir), options);
}

export function auditResultDirSnapshot(snapshot: ResultDirSnapshot, options: ResultDirAuditOptions = {}): Finding[] {
  const findings: Finding[] = snapshot.problems.map(problemToFinding);
  const { paths, present, status, finishFlag } = snapshot;
  const add = (file: string, line: number, severity: Finding["severity"], code: string, message: string, hint: string) =>
    findings.push({ file, line, severity, code, message, hint });

  if (!present.blueprint) {
    add(
      paths.blueprint,
      0,
      "error",
      "RESULT_FILE_MISSING",
      "blueprint.md is missing: the result cannot be traced to what was run",
      "the worker copies the blueprint it executed here during prepare; copy it from the campaign's stages/<n>/blueprints/",
    );
  }
  if (!present.status) {
    add(
      paths.status,
      0,
      "error",
      "RESULT_FILE_MISSING",
      "status.json is missing: the state of the run is unknown",
      "status.json is written by the worker from the first step on; re-run or re-attach the worker for this blueprint",
    );
  }

  const finished = present.finishFlag || (status !== undefined && isTerminalRunState(status.state));
  if (finished && !present.result) {
    add(
      paths.result,
      0,
      "error",
      "RESULT_FILE_MISSING",
      "result.md is missing although the run has finished",
      "the worker writes result.md before finish.flag; write it from status.json and metrics.jsonl (outcome, final metrics, verdict)",
    );
  }
  if (status !== undefined && isTerminalRunState(status.state) && !present.finishFlag) {
    add(
      paths.finishFlag,
      0,
      "error",
      "FINISH_FLAG_MISSING",
      `status.json says ${status.state} but finish.flag is missing: the worker stopped before its last write`,
      `once result.md is complete, write finish.flag containing "${status.state}"`,
    );
  }

  if (finishFlag?.state !== undefined && status !== undefined && status.state !== finishFlag.state) {
    const why = isTerminalRunState(status.state) ? "the two final states disagree" : "a run with finish.flag must be in a terminal state";
    add(
      paths.finishFlag,
      1,
      "error",
      "FINISH_FLAG_MISMATCH",
      `finish.flag says ${finishFlag.state} but status.json says ${status.state}: ${why}`,
      `check ${paths.status} and the last events in events.jsonl; finish.flag must be written last and repeat status.json's final state`,
    );
  }

  if (status !== undefined && status.state !== "succeeded" && isTerminalRunState(status.state) && !status.reason) {
    add(
      paths.status,
      1,
      "warning",
      "STATUS_REASON_MISSING",
      `the run ended ${status.state} without a reason`,
      "set status.json reason to the classified cause (e.g. out of memory after 3 attempts) so the leader can plan around it",
    );
  }

  if (status !== undefined && isActiveRunState(status.state) && !present.finishFlag) {
    const maxAge = options.heartbeatMaxAgeMs ?? defaultHeartbeatMaxAgeMs;
    const now = options.now ?? new Date();
    const last = status.heartbeatAt ?? status.startedAt;
    if (last === null) {
      if (status.state === "running") {
        add(
          paths.status,
          1,
          "warning",
          "HEARTBEAT_MISSING",
          "the run is running but status.json has no heartbeatAt or startedAt",
          "the supervisor writes heartbeatAt while it watches; re-attach a worker to this run",
        );
      }
    } else {
      const age = now.getTime() - Date.parse(last);
      if (age > maxAge) {
        add(
          paths.status,
          1,
          "warning",
          "HEARTBEAT_STALE",
          `the run is ${status.state} but its last heartbeat is ${formatDuration(age)} old (limit ${formatDuration(maxAge)}): the supervisor may be dead`,
          "check the host; `a3r worker run` on the same blueprint re-attaches to a live run, or cancels a dead one",
        );
      }
    }
  }

  findings.push(...auditSteps(snapshot));
  return findings;
}

function auditSteps(snapshot: ResultDirSnapshot): Finding[] {
  const findings: Finding[] = [];
  const { records, lines } = snapshot.metrics;
  for (let index = 1; index < records.length; index += 1) {
    const previous = records[index - 1]!;
    const current = records[index]!;
    // A resume from a checkpoint restarts steps; that is fine when the attempt says so.
    if (current.step < previous.step && current.attempt === previous.attempt) {
      findings.push({
        file: snapshot.paths.metrics,
        line: lines[index] ?? 0,
        severity: "error",
        code: "METRICS_STEP_DECREASED",
        message: `step goes back from ${previous.step} (line ${lines[index - 1]}) to ${current.step} within one attempt`,
        hint: "steps must only go forward; when a run resumes from a checkpoint, give the new lines the new attempt number",
      });
    }
  }
  return findings;
}

const problemRules: Record<string, { code: string; severity: Finding["severity"]; hint: string }> = {
  STATUS_NOT_JSON: {
    code: "STATUS_INVALID",
    severity: "error",
    hint: "status.json is replaced atomically by a3r; a broken one was edited by hand or by another program: restore its fields",
  },
  STATUS_INVALID: { code: "STATUS_INVALID", severity: "error", hint: "fix the field named; campaign/README.md lists the status.json fields" },
  FINISH_FLAG_INVALID: {
    code: "FINISH_FLAG_INVALID",
    severity: "error",
    hint: "finish.flag holds exactly one of succeeded, failed, timed_out, cancelled, refused, stopped_early",
  },
  RESULT_FILE_LINKED: {
    code: "RESULT_FILE_LINKED",
    severity: "error",
    hint: "a trainer may have planted a link to read a file it may not; delete the link, check the run's command, and re-run the worker",
  },
  LEASE_INVALID: { code: "LEASE_INVALID", severity: "warning", hint: "if no supervisor is running, delete lease.json; the next worker acquires a fresh lease" },
};

function problemToFinding(problem: RecordProblem): Finding {
  const file = problem.file;
  const known = problemRules[problem.code];
  if (known) return { file, line: problem.line, severity: known.severity, code: known.code, message: problem.message, hint: known.hint };
  const prefix = file.endsWith("metrics.jsonl") ? "METRICS" : file.endsWith("events.jsonl") ? "EVENTS" : file.endsWith("ledger.jsonl") ? "LEDGER" : "RECORD";
  if (problem.torn) {
    return {
      file,
      line: problem.line,
      severity: "warning",
      code: `${prefix}_LINE_TORN`,
      message: problem.message,
      hint: "expected after a crash; the next append starts on a new line, and the torn line can be deleted",
    };
  }
  return {
    file,
    line: problem.line,
    severity: "error",
    code: `${prefix}_LINE_INVALID`,
    message: problem.message,
    hint: "each line must be one JSON object of the file's schema; fix or delete the line",
  };
}

export { problemToFinding };
