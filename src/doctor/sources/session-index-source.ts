import type { JsonValue } from "../../stores/json.js";
import { isRecord } from "../../transcript/record.js";
import { parseLegacyJson, readLegacyText, repeatedJsonKeys } from "../legacy-file.js";

export interface IndexEntry {
  /** Canonical key, `agent:<agentId>:…`. */
  key: string;
  /** The key as written in the file. */
  originalKey: string;
  entry: { [key: string]: JsonValue };
  sessionId: string | null;
  updatedAt: number | null;
}

export interface IndexProblem {
  key: string | null;
  reason: string;
}

export interface SessionIndexRead {
  entries: IndexEntry[];
  problems: IndexProblem[];
  /** `flat` (key → entry), `versioned` ({ version, agents }), or `empty` (0 bytes / only whitespace). */
  format: "flat" | "versioned" | "empty";
  /** Entries in the file, before merging keys that canonicalize alike. */
  recordCount: number;
}

/** Fields that tie an entry to the old file layout; identity is {agentId, sessionId} now. */
const FILE_ERA_FIELDS = ["sessionFile", "transcriptLocator", "transcriptPath"];
const SPECIAL_KEYS = new Set(["global", "unknown"]);

/** `main`, `group:…` and other pre-agent keys become `agent:<id>:…`; keys are lower case. */
export function canonicalSessionKey(key: string, agentId: string): string {
  const lower = key.trim().toLowerCase();
  if (lower.startsWith("agent:") || SPECIAL_KEYS.has(lower)) return lower;
  return `agent:${agentId.toLowerCase()}:${lower}`;
}

/** Keys written twice in the index: JSON keeps the last copy, so the others would vanish unsaid. */
function repeatedKeyProblems(text: string): IndexProblem[] {
  let repeated: Map<string, number>;
  try {
    JSON.parse(text);
    repeated = repeatedJsonKeys(text);
  } catch {
    // Hand-edited JSON5 (comments, trailing commas): parsed by JSON5, which keeps the last too.
    return [];
  }
  return [...repeated].map(([key, times]) => ({
    key,
    reason: `key given ${times} times in the file; only the last copy is imported`,
  }));
}

function entriesOf(doc: Record<string, unknown>): {
  map: Record<string, unknown>;
  format: "flat" | "versioned";
} {
  if (typeof doc.version === "number" && isRecord(doc.agents))
    return { map: doc.agents, format: "versioned" };
  return { map: doc, format: "flat" };
}

function toEntry(originalKey: string, value: unknown, agentId: string): IndexEntry | IndexProblem {
  if (!isRecord(value))
    return {
      key: originalKey,
      reason: `entry is ${Array.isArray(value) ? "an array" : typeof value}, not an object`,
    };
  const entry = { ...value } as { [key: string]: JsonValue };
  for (const field of FILE_ERA_FIELDS) delete entry[field];
  const updatedAt =
    typeof value.updatedAt === "number" && Number.isFinite(value.updatedAt)
      ? value.updatedAt
      : null;
  const sessionId =
    typeof value.sessionId === "string" && value.sessionId !== "" ? value.sessionId : null;
  return {
    key: canonicalSessionKey(originalKey, agentId),
    originalKey,
    entry,
    sessionId,
    updatedAt,
  };
}

/** Newer `updatedAt` wins; on a tie the entry whose key was already canonical wins. */
function preferred(a: IndexEntry, b: IndexEntry): IndexEntry {
  const at = a.updatedAt ?? -1;
  const bt = b.updatedAt ?? -1;
  if (at !== bt) return at > bt ? a : b;
  return b.originalKey === b.key && a.originalKey !== a.key ? b : a;
}

/** Reads and canonicalizes a legacy session index (`sessions.json`). Throws only if unreadable. */
export function readSessionIndex(path: string, agentId: string): SessionIndexRead {
  const text = readLegacyText(path);
  if (text.trim() === "") return { entries: [], problems: [], format: "empty", recordCount: 0 };
  // Hand-edited indexes (comments, trailing commas) were accepted by the old runtime.
  const doc = parseLegacyJson(path, text);
  if (!isRecord(doc)) {
    throw new Error(
      `the index is ${Array.isArray(doc) ? "an array" : typeof doc}, not an object of sessions`,
    );
  }
  const { map, format } = entriesOf(doc);
  const merged = new Map<string, IndexEntry>();
  const problems: IndexProblem[] = repeatedKeyProblems(text);
  for (const [originalKey, value] of Object.entries(map)) {
    const read = toEntry(originalKey, value, agentId);
    if ("reason" in read) {
      problems.push(read);
      continue;
    }
    const existing = merged.get(read.key);
    merged.set(read.key, existing ? preferred(existing, read) : read);
  }
  return { entries: [...merged.values()], problems, format, recordCount: Object.keys(map).length };
}
