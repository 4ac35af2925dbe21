import { basename } from "node:path";
import { isRecord } from "../../transcript/record.js";
import { parseLegacyJson, readLegacyText } from "../legacy-file.js";
import { readJsonLines } from "../line-reader.js";

/**
 * Readers for the legacy cron and subagent files (`cron/jobs.json`, `cron/jobs-state.json`,
 * `cron/runs/<jobId>.jsonl`, `subagents/runs.json`). Pure: they read and classify, the kinds
 * write. Every record that cannot be used comes back as a problem naming its key or line.
 */

type JsonObject = Record<string, unknown>;

export interface KeyedProblem {
  key: string | null;
  line: number | null;
  reason: string;
}

export interface KeyedRecords<T> {
  /** `empty`: a 0-byte or whitespace-only file, which the legacy writers left after a crash. */
  format: "empty" | "array" | "versioned";
  records: T[];
  problems: KeyedProblem[];
  notes: string[];
}

/** Parses a whole JSON file, falling back to JSON5 (comments, trailing commas) as the gateway did. */
export function readJsonDocument(absPath: string): unknown {
  const text = readLegacyText(absPath);
  if (text.trim() === "") return undefined;
  return parseLegacyJson(absPath, text);
}

function stringId(value: unknown): string | null {
  return typeof value === "string" && value.trim() !== "" ? value : null;
}

export interface LegacyCronJob {
  id: string;
  job: JsonObject;
}

/** `jobs.json`: a bare array of jobs, or `{ version, jobs: [...] }`; `jobId` is an old spelling of `id`. */
export function readCronJobs(absPath: string): KeyedRecords<LegacyCronJob> {
  const doc = readJsonDocument(absPath);
  const result: KeyedRecords<LegacyCronJob> = {
    format: "empty",
    records: [],
    problems: [],
    notes: [],
  };
  if (doc === undefined) {
    result.notes.push("empty file (no jobs)");
    return result;
  }
  let jobs: unknown;
  if (Array.isArray(doc)) {
    result.format = "array";
    jobs = doc;
  } else if (isRecord(doc) && Array.isArray(doc.jobs)) {
    result.format = "versioned";
    jobs = doc.jobs;
  } else {
    throw new Error('expected an array of jobs or { "version": 1, "jobs": [...] }');
  }
  const seen = new Set<string>();
  for (const [index, job] of (jobs as unknown[]).entries()) {
    const where = `jobs[${index}]`;
    if (!isRecord(job)) {
      result.problems.push({ key: where, line: null, reason: "not a job object" });
      continue;
    }
    const id = stringId(job.id) ?? stringId(job.jobId);
    if (!id) {
      result.problems.push({ key: where, line: null, reason: "job without an id" });
      continue;
    }
    if (seen.has(id)) {
      result.problems.push({
        key: id,
        line: null,
        reason: "duplicate job id; the first one is kept",
      });
      continue;
    }
    seen.add(id);
    const { jobId: _oldSpelling, ...rest } = job;
    result.records.push({ id, job: { ...rest, id } });
  }
  return result;
}

export interface LegacyCronState {
  id: string;
  state: JsonObject;
}

/** `jobs-state.json`: `{ version, jobs: { <jobId>: { updatedAtMs, scheduleIdentity, state } } }`. */
export function readCronJobsState(absPath: string): KeyedRecords<LegacyCronState> {
  const doc = readJsonDocument(absPath);
  const result: KeyedRecords<LegacyCronState> = {
    format: "empty",
    records: [],
    problems: [],
    notes: [],
  };
  if (doc === undefined) {
    result.notes.push("empty file (no job state)");
    return result;
  }
  if (!isRecord(doc) || !isRecord(doc.jobs)) {
    throw new Error('expected { "version": 1, "jobs": { "<jobId>": { "state": {...} } } }');
  }
  result.format = "versioned";
  for (const [id, entry] of Object.entries(doc.jobs)) {
    if (!isRecord(entry) || !isRecord(entry.state)) {
      result.problems.push({ key: id, line: null, reason: "entry without a state object" });
      continue;
    }
    result.records.push({ id, state: entry.state });
  }
  return result;
}

const RUN_STATUSES = new Set(["ok", "error", "skipped"]);

export interface LegacyCronRun {
  line: number;
  jobId: string;
  status: "ok" | "error" | "skipped";
  ranAt: number;
  durationMs?: number;
  error?: string;
  /** The whole line, verbatim: summary, delivery, session, usage … */
  record: JsonObject;
}

function nonNegativeInteger(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** Unix milliseconds, or an ISO date-time string. */
function instant(value: unknown): number | undefined {
  if (typeof value === "string" && /^\d{4}-\d\d-\d\d[T ]/.test(value)) {
    const ms = Date.parse(value);
    return Number.isSafeInteger(ms) && ms >= 0 ? ms : undefined;
  }
  return nonNegativeInteger(value);
}

const START_FIELDS = ["runAtMs", "startedAtMs", "startedAt"];
/** The gateways wrote a run's line when it finished, stamped with the finish time. */
const FINISH_FIELDS = ["ts", "finishedAtMs", "finishedAt", "endedAtMs", "endedAt", "timestamp"];

/**
 * When a run started: its start field, else its finish time less its duration. Runs are listed by
 * this time, so a line with only a finish time must not pass for one that started later.
 */
function runStart(line: JsonObject, durationMs: number | undefined): number | undefined {
  for (const name of START_FIELDS) {
    const at = instant(line[name]);
    if (at !== undefined) return at;
  }
  for (const name of FINISH_FIELDS) {
    const at = instant(line[name]);
    if (at !== undefined) return Math.max(0, at - (durationMs ?? 0));
  }
  return undefined;
}

/** The job id a run log belongs to: its file name (`<jobId>.jsonl`). */
export function cronRunJobId(absPath: string): string {
  return basename(absPath).replace(/\.jsonl$/, "");
}

/**
 * `runs/<jobId>.jsonl`: one `{ ts, jobId, action: "finished", status, … }` per line. Lines for
 * other actions are not runs and are passed over; a finished line without a usable status or time
 * is a problem. Yields in file order, one line in memory at a time.
 */
export function* readCronRuns(
  absPath: string,
): Generator<
  LegacyCronRun | (KeyedProblem & { line: number }) | { line: number; skipped: string }
> {
  const fileJobId = cronRunJobId(absPath);
  for (const read of readJsonLines(absPath)) {
    if ("error" in read) {
      yield { key: null, line: read.line, reason: read.error };
      continue;
    }
    const value = read.value;
    if (!isRecord(value)) {
      yield { key: null, line: read.line, reason: "not a JSON object" };
      continue;
    }
    if (value.action !== undefined && value.action !== "finished") {
      yield { line: read.line, skipped: `action ${JSON.stringify(value.action)}` };
      continue;
    }
    const status = value.status;
    if (typeof status !== "string" || !RUN_STATUSES.has(status)) {
      yield {
        key: null,
        line: read.line,
        reason: `status must be ok, error or skipped, got ${JSON.stringify(status)}`,
      };
      continue;
    }
    const durationMs = nonNegativeInteger(value.durationMs);
    const ranAt = runStart(value, durationMs);
    if (ranAt === undefined) {
      yield {
        key: null,
        line: read.line,
        reason: "no run time (runAtMs, ts, startedAt, finishedAt …)",
      };
      continue;
    }
    yield {
      line: read.line,
      jobId: stringId(value.jobId) ?? fileJobId,
      status: status as LegacyCronRun["status"],
      ranAt,
      ...(durationMs === undefined ? {} : { durationMs }),
      ...(typeof value.error === "string" ? { error: value.error } : {}),
      record: value,
    };
  }
}

export interface LegacySubagentRun {
  runId: string;
  record: JsonObject;
}

/** `subagents/runs.json`: `{ version: 1 | 2, runs: { <runId>: record } }` (an array of runs is accepted too). */
export function readSubagentRuns(absPath: string): KeyedRecords<LegacySubagentRun> {
  const doc = readJsonDocument(absPath);
  const result: KeyedRecords<LegacySubagentRun> = {
    format: "empty",
    records: [],
    problems: [],
    notes: [],
  };
  if (doc === undefined) {
    result.notes.push("empty file (no runs)");
    return result;
  }
  const runs = isRecord(doc) ? doc.runs : undefined;
  let entries: [string | null, unknown][];
  if (Array.isArray(runs)) entries = runs.map((run) => [null, run]);
  else if (isRecord(runs)) entries = Object.entries(runs);
  else throw new Error('expected { "version": 2, "runs": { "<runId>": {...} } }');
  result.format = "versioned";
  for (const [index, [key, run]] of entries.entries()) {
    const where = key ?? `runs[${index}]`;
    if (!isRecord(run)) {
      result.problems.push({ key: where, line: null, reason: "not a run object" });
      continue;
    }
    const runId = stringId(run.runId) ?? key;
    if (!runId) {
      result.problems.push({ key: where, line: null, reason: "run without a runId" });
      continue;
    }
    result.records.push({ runId, record: { ...run, runId } });
  }
  return result;
}
