import { createHash } from "node:crypto";
import type { TranscriptEvent } from "../../transcript/event.js";
import { isRecord } from "../../transcript/record.js";
import { readJsonLines } from "../line-reader.js";

export const CURRENT_TRANSCRIPT_VERSION = 3;

export interface TranscriptFileName {
  /** The session the file stands for: its name up to `.jsonl` (never the header id). */
  sessionId: string;
  /** `deleted` / `reset` for soft-deleted and reset archives, else null. */
  archive: "deleted" | "reset" | null;
  /** When the archive was made, from its `<ts>` suffix (ISO with `-` for `:`), if parseable. */
  archivedAt: number | null;
}

const ARCHIVE = /^(.+)\.jsonl\.(deleted|reset)\.(.+)$/;

/** `…Z` with `-` in place of `:` in the time part, back to a Date. */
function parseArchiveTime(stamp: string): number | null {
  const iso = stamp.replace(/T(\d{2})-(\d{2})-(\d{2})/, "T$1:$2:$3");
  const at = Date.parse(iso);
  return Number.isFinite(at) ? at : null;
}

export function parseTranscriptFileName(name: string): TranscriptFileName | null {
  const archive = ARCHIVE.exec(name);
  if (archive) {
    const kind = archive[2] as "deleted" | "reset";
    return {
      sessionId: archive[1] as string,
      archive: kind,
      archivedAt: parseArchiveTime(archive[3] as string),
    };
  }
  if (name.endsWith(".jsonl") && name.length > ".jsonl".length) {
    return { sessionId: name.slice(0, -".jsonl".length), archive: null, archivedAt: null };
  }
  return null;
}

export type TranscriptItem =
  | { kind: "event"; line: number; event: TranscriptEvent }
  | { kind: "problem"; line: number; reason: string };

/** Deterministic ids for version-1 entries, so a rerun assigns the same ones. */
export function v1EntryId(sessionId: string, index: number): string {
  return createHash("sha256")
    .update(`agentstate-transcript-v1\n${sessionId}\n${index}`)
    .digest("hex")
    .slice(0, 8);
}

interface UpgradeState {
  sessionId: string;
  version: number;
  index: number;
  previousId: string | null;
}

/** Brings one record to version 3: v1 gets ids and a linear chain, v2 renames hookMessage. */
function upgrade(record: Record<string, unknown>, state: UpgradeState): Record<string, unknown> {
  if (record.type === "session") {
    return state.version < CURRENT_TRANSCRIPT_VERSION
      ? { ...record, version: CURRENT_TRANSCRIPT_VERSION }
      : record;
  }
  let out = record;
  if (state.version < 2) {
    const id = typeof record.id === "string" ? record.id : v1EntryId(state.sessionId, state.index);
    const { firstKeptEntryIndex, ...rest } = record;
    out = { type: record.type, id, parentId: state.previousId, ...rest };
    if (typeof firstKeptEntryIndex === "number")
      out.firstKeptEntryId = v1EntryId(state.sessionId, firstKeptEntryIndex);
  }
  const message = out.message;
  if (state.version < 3 && isRecord(message) && message.role === "hookMessage") {
    out = { ...out, message: { ...message, role: "custom" } };
  }
  return out;
}

function problemOf(record: unknown): string | null {
  if (!isRecord(record)) return "not a JSON object";
  if (typeof record.type !== "string" || record.type === "") return 'missing string "type"';
  if (typeof record.id !== "string" || record.id === "") return 'missing string "id"';
  if (
    record.parentId !== undefined &&
    record.parentId !== null &&
    typeof record.parentId !== "string"
  ) {
    return '"parentId" is neither a string nor null';
  }
  return null;
}

/**
 * The records of a legacy transcript file, streamed, upgraded to the current version. Lines that
 * cannot become events are yielded as problems with their line number, never dropped silently.
 */
export function* readTranscript(path: string, sessionId: string): Generator<TranscriptItem> {
  const state: UpgradeState = {
    sessionId,
    version: CURRENT_TRANSCRIPT_VERSION,
    index: 0,
    previousId: null,
  };
  let first = true;
  for (const line of readJsonLines(path)) {
    if ("error" in line) {
      yield { kind: "problem", line: line.line, reason: line.error };
      continue;
    }
    const record = line.value;
    if (first && isRecord(record) && record.type === "session") {
      state.version = typeof record.version === "number" ? record.version : 1;
    } else if (!first && isRecord(record) && record.type === "session") {
      yield {
        kind: "problem",
        line: line.line,
        reason: "a second session header in the middle of the file",
      };
      continue;
    }
    first = false;
    const upgraded = isRecord(record) ? upgrade(record, state) : record;
    const problem = problemOf(upgraded);
    if (problem) {
      yield { kind: "problem", line: line.line, reason: problem };
      continue;
    }
    const event = upgraded as TranscriptEvent;
    if (event.type !== "session") {
      state.index++;
      state.previousId = event.id;
    }
    yield { kind: "event", line: line.line, event };
  }
}
