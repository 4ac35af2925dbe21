import { StateError } from "../db/errors.js";
import { type CronExpression, nextCronRun, parseCronExpression } from "./cron-expression.js";
import { checkTimeZone } from "./time-zone.js";

/**
 * When a cron job runs, in the legacy `schedule` shape (kept verbatim in the job's definition):
 * - `{ kind: "every", everyMs, anchorMs? }` (alias `"interval"`): at anchor + k × everyMs; the
 *   anchor defaults to the job's creation time.
 * - `{ kind: "cron", expr, tz?, staggerMs? }`: a cron expression as croner reads it (see
 *   `CronExpression`) in a time zone (default: the host's, as before), due when croner says.
 *   `staggerMs` shifts every run of the job by a fixed offset in [0, staggerMs) derived from its
 *   id, so jobs written for the top of the hour spread out.
 * - `{ kind: "at", at: ISO string }` or `{ kind: "at", atMs }`: once.
 * A missing `kind` is inferred from the fields, as the legacy scheduler did.
 */
export type CronSchedule =
  | { kind: "every" | "interval"; everyMs: number; anchorMs?: number }
  | { kind: "cron"; expr: string; tz?: string; staggerMs?: number }
  | { kind: "at"; at?: string; atMs?: number };

export type ParsedSchedule =
  | { kind: "every"; everyMs: number; anchorMs: number | null }
  | { kind: "cron"; cron: CronExpression; timeZone: string; staggerMs: number }
  | { kind: "at"; atMs: number };

/** What a job's next run depends on besides its schedule. */
export interface ScheduleContext {
  jobId: string;
  /** Default anchor of `every` schedules. */
  createdAt: number;
  /** A one-shot `at` job is done once it has run at or after its time. */
  lastRunAt: number | null;
}

function invalid(why: string): StateError {
  return new StateError("E_INVALID_ARGUMENT", `invalid cron schedule: ${why}`);
}

function field(raw: Record<string, unknown>, name: string): unknown {
  return raw[name] ?? undefined;
}

function positiveInteger(name: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw invalid(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function inferKind(raw: Record<string, unknown>): unknown {
  if (raw.kind !== undefined) return raw.kind;
  if (raw.expr !== undefined || raw.cron !== undefined) return "cron";
  if (raw.everyMs !== undefined) return "every";
  if (raw.at !== undefined || raw.atMs !== undefined) return "at";
  return undefined;
}

function parseAt(raw: Record<string, unknown>): ParsedSchedule {
  const at = field(raw, "atMs") ?? field(raw, "at");
  // Date.parse reads an ISO string without a zone as local time, as the legacy scheduler did.
  const atMs = typeof at === "string" ? Date.parse(at) : at;
  if (typeof atMs !== "number" || !Number.isSafeInteger(atMs) || atMs < 0) {
    throw invalid(`"at" must be an ISO date-time or atMs, got ${JSON.stringify(at)}`);
  }
  return { kind: "at", atMs };
}

/** Validates and normalizes a schedule; `defaultTimeZone` applies to cron schedules without `tz`. */
export function parseSchedule(raw: unknown, defaultTimeZone: string): ParsedSchedule {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw invalid("expected an object such as { kind: 'cron', expr: '0 9 * * *' }");
  }
  const schedule = raw as Record<string, unknown>;
  const kind = inferKind(schedule);
  if (kind === "every" || kind === "interval") {
    const anchor = field(schedule, "anchorMs");
    return {
      kind: "every",
      everyMs: positiveInteger("everyMs", schedule.everyMs, 1),
      anchorMs: anchor === undefined ? null : positiveInteger("anchorMs", anchor, 0),
    };
  }
  if (kind === "cron") {
    const expr = field(schedule, "expr") ?? field(schedule, "cron");
    if (typeof expr !== "string") throw invalid(`cron schedules need "expr"`);
    const stagger = field(schedule, "staggerMs");
    const timeZone = checkTimeZone(field(schedule, "tz") ?? defaultTimeZone);
    return {
      kind: "cron",
      cron: parseCronExpression(expr, timeZone),
      timeZone,
      staggerMs: stagger === undefined ? 0 : positiveInteger("staggerMs", stagger, 0),
    };
  }
  if (kind === "at") return parseAt(schedule);
  throw invalid(`unknown kind ${JSON.stringify(kind)} (expected "every", "cron" or "at")`);
}

/** FNV-1a: a stable hash of the job id, so a job's stagger survives restarts and moves. */
function staggerOffset(jobId: string, staggerMs: number): number {
  if (staggerMs <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < jobId.length; i++) {
    hash = Math.imul(hash ^ jobId.charCodeAt(i), 0x01000193) >>> 0;
  }
  return hash % staggerMs;
}

/** The next run strictly after `after`, or null when the schedule will not fire again. */
export function nextRunAt(
  schedule: ParsedSchedule,
  after: number,
  context: ScheduleContext,
): number | null {
  switch (schedule.kind) {
    case "every": {
      const anchor = schedule.anchorMs ?? context.createdAt;
      if (after < anchor) return anchor;
      return anchor + (Math.floor((after - anchor) / schedule.everyMs) + 1) * schedule.everyMs;
    }
    case "cron": {
      const offset = staggerOffset(context.jobId, schedule.staggerMs);
      const next = nextCronRun(schedule.cron, after - offset);
      return next === null ? null : next + offset;
    }
    case "at":
      // Not "after `after`": a one-shot whose time passed while nothing ran is still due, once.
      return context.lastRunAt !== null && context.lastRunAt >= schedule.atMs
        ? null
        : schedule.atMs;
  }
}
