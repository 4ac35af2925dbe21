import { isStateError } from "../../db/errors.js";
import type { AgentState } from "../../home.js";
import { isKnownEventType, type TranscriptEvent } from "../../transcript/event.js";
import type { LegacySource } from "../discover.js";
import { MAX_LINE_BYTES, readLines } from "../line-reader.js";
import {
  parseTranscriptFileName,
  readTranscript,
  type TranscriptFileName,
  type TranscriptItem,
} from "../sources/transcript-source.js";
import {
  type ImportContext,
  type ImportedRecords,
  type ImportOutcome,
  type KindHandler,
  problem,
  type SourceProblem,
  type SourceScan,
} from "./types.js";

/** Events per write transaction: short enough that readers never wait long on a big import. */
const BATCH = 500;
/** Append failures that concern one record (reported with its line), not the whole import. */
const RECORD_ERRORS = ["E_CONFLICT", "E_INVALID_ID", "E_INVALID_ARGUMENT", "E_TOO_LARGE"] as const;

function sessionIdOf(source: LegacySource): string {
  const name = source.path.split("/").at(-1) ?? source.path;
  const parsed = parseTranscriptFileName(name);
  if (!parsed) throw new Error(`not a transcript file name: ${source.path}`);
  return parsed.sessionId;
}

/**
 * The session is named by its file; a header that names another id is said, not silently
 * overruled. Only said: gateways write such archives themselves (a reset archive whose header
 * names the session that replaced it), and every record still imports, so the source completes.
 */
function headerMismatch(item: TranscriptItem, sessionId: string): string | null {
  if (item.kind !== "event" || item.event.type !== "session" || item.event.id === sessionId)
    return null;
  return `warning: the header (line ${item.line}) names session ${JSON.stringify(item.event.id)}, the file name ${JSON.stringify(sessionId)}; it is imported as ${JSON.stringify(sessionId)}`;
}

/**
 * Counts the records and finds the broken lines. Repeated ids are noted, not judged: identical
 * copies merge at import and a different record under a taken id is refused there, by line.
 * Only ids are kept in memory, so scanning a large file stays small.
 */
function scan(absPath: string, source: LegacySource): SourceScan {
  const problems: SourceProblem[] = [];
  const unknown = new Set<string>();
  const firstLine = new Map<string, number>();
  const repeated: string[] = [];
  let records = 0;
  let header: string | null = null;
  const sessionId = sessionIdOf(source);
  for (const item of readTranscript(absPath, sessionId)) {
    const mismatch = headerMismatch(item, sessionId);
    if (mismatch) header = mismatch;
    if (item.kind === "problem") {
      problems.push(problem(item.line, item.reason));
      continue;
    }
    const first = firstLine.get(item.event.id);
    if (first === undefined) firstLine.set(item.event.id, item.line);
    else if (repeated.length < 20)
      repeated.push(`event id ${item.event.id} at lines ${first} and ${item.line}`);
    if (!isKnownEventType(item.event.type)) unknown.add(item.event.type);
    records++;
  }
  const notes = [...unknown].map((type) => `unknown record type "${type}" (kept verbatim)`);
  if (header !== null) notes.unshift(header);
  notes.push(
    ...repeated.map((r) => `repeated ${r} (identical copies merge; a different record is refused)`),
  );
  return { records, problems, notes };
}

/**
 * Every non-blank line of a sound transcript becomes one record (a repeated identical record
 * counts too, as already present), so the lines are the records an import must report.
 */
function count(absPath: string, onBytes: (bytes: Buffer) => void): number {
  let lines = 0;
  for (const line of readLines(absPath, MAX_LINE_BYTES, onBytes)) {
    if ("error" in line || line.text.trim() !== "") lines++;
  }
  return lines;
}

function importBatch(
  agent: AgentState,
  sessionId: string,
  batch: TranscriptItem[],
  outcome: ImportOutcome,
): void {
  const events = batch.flatMap((item) => (item.kind === "event" ? [item.event] : []));
  if (events.length === 0) return;
  const options = { verbatim: true, ensureHeader: false } as const;
  try {
    // The common case: every record is good, and the batch is one savepoint, not one per event.
    const results = agent.transcripts.appendMany(sessionId, events, options);
    outcome.records += results.length;
    outcome.alreadyPresent += results.filter((r) => r.deduplicated).length;
    return;
  } catch (error) {
    if (!RECORD_ERRORS.some((code) => isStateError(error, code))) throw error;
  }
  // A bad record rolled the batch back: redo it one event at a time to keep the good ones.
  agent.db.tx(() => {
    for (const item of batch) {
      if (item.kind !== "event") continue;
      try {
        const result = agent.transcripts.append(sessionId, item.event, options);
        outcome.records++;
        if (result.deduplicated) outcome.alreadyPresent++;
      } catch (error) {
        if (!RECORD_ERRORS.some((code) => isStateError(error, code))) throw error;
        outcome.problems.push(problem(item.line, (error as Error).message));
      }
    }
  });
}

/** A live transcript for the same session, which keeps the session active. */
function hasLiveFile(context: ImportContext, sessionId: string): boolean {
  const dir = context.source.path.slice(0, context.source.path.lastIndexOf("/") + 1);
  return context.allSources.some(
    (s) => s.kind === "transcript" && s.path === `${dir}${sessionId}.jsonl`,
  );
}

/** The first and the last event time of a log: when its session began and was last active. */
interface LogTimes {
  first: number | null;
  last: number | null;
}

function noteTime(times: LogTimes, event: TranscriptEvent): void {
  const at = typeof event.timestamp === "string" ? Date.parse(event.timestamp) : Number.NaN;
  if (!Number.isFinite(at)) return;
  times.first ??= at;
  times.last = at;
}

/**
 * The session keeps its own times, not the import's: it began at its log's first event (the
 * header), and an archive without a live file ended when it was archived (the name's time),
 * else at its last event.
 */
function settleTimes(
  context: ImportContext,
  file: TranscriptFileName,
  times: LogTimes,
  agent: AgentState,
): void {
  if (times.first !== null) agent.lifecycle.markStarted(file.sessionId, times.first);
  if (file.archive !== null && !hasLiveFile(context, file.sessionId)) {
    const endedAt = file.archivedAt ?? times.last ?? context.source.mtimeMs;
    agent.lifecycle.markEnded(file.sessionId, endedAt);
  }
}

function importTranscript(context: ImportContext): ImportOutcome {
  const { source } = context;
  const agent = context.home.agent(source.agentId as string);
  const name = source.path.split("/").at(-1) ?? "";
  const file = parseTranscriptFileName(name);
  if (!file) throw new Error(`not a transcript file name: ${source.path}`);
  const outcome: ImportOutcome = { records: 0, alreadyPresent: 0, problems: [], notes: [] };
  const times: LogTimes = { first: null, last: null };
  let batch: TranscriptItem[] = [];
  for (const item of readTranscript(source.absPath, file.sessionId)) {
    const mismatch = headerMismatch(item, file.sessionId);
    if (mismatch) outcome.notes?.push(mismatch);
    if (item.kind === "problem") outcome.problems.push(problem(item.line, item.reason));
    else {
      batch.push(item);
      noteTime(times, item.event);
    }
    if (batch.length >= BATCH) {
      importBatch(agent, file.sessionId, batch, outcome);
      batch = [];
    }
  }
  importBatch(agent, file.sessionId, batch, outcome);
  // Broken lines are found while reading, refused records when their batch is written: report
  // them all in file order.
  outcome.problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  if (outcome.records > 0) settleTimes(context, file, times, agent);
  return outcome;
}

/** The records of the file whose event id the session does not hold yet. */
function pending(absPath: string, source: LegacySource, imported: ImportedRecords): number {
  const sessionId = sessionIdOf(source);
  const agentId = source.agentId as string;
  let left = 0;
  for (const item of readTranscript(absPath, sessionId)) {
    if (item.kind === "event" && !imported.hasTranscriptEvent(agentId, sessionId, item.event.id))
      left++;
  }
  return left;
}

export const transcriptKind: KindHandler = { scan, count, import: importTranscript, pending };
