import { createHash } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import { checkText, checkTime, MAX_ERROR_TEXT } from "../checks.js";
import { checkMigrationRunId, checkSourceText } from "./migration-ledger-rows.js";

const MAX_LIST_LIMIT = 100_000;

export interface QuarantinedLineRow {
  source_path: string;
  line_number: number;
  line_sha256: string;
  migration_kind: string;
  source_sha256: string;
  reason: string;
  line_bytes: Uint8Array;
  run_id: string;
  quarantined_at: number;
}

export const MIGRATION_QUARANTINE_COLUMNS = columnsOf<QuarantinedLineRow>()(
  "source_path",
  "line_number",
  "line_sha256",
  "migration_kind",
  "source_sha256",
  "reason",
  "line_bytes",
  "run_id",
  "quarantined_at",
);

/** A line of a legacy source to keep: the file's bytes of the line, without its `\n`. */
export interface NewQuarantinedLine {
  /** The source file, relative to the home, with `/` separators. */
  path: string;
  /** 1-based. */
  line: number;
  kind: string;
  /** SHA-256 of the whole source file when the line was taken from it. */
  sourceSha256: string;
  reason: string;
  bytes: Uint8Array;
  runId: string;
}

export interface QuarantinedLine {
  path: string;
  line: number;
  /** SHA-256 of `bytes`, hex. */
  sha256: string;
  kind: string;
  sourceSha256: string;
  reason: string;
  bytes: Buffer;
  runId: string;
  quarantinedAt: number;
}

export interface QuarantineListOptions {
  /** Only the lines that this migration run quarantined. */
  runId?: string;
  limit?: number;
}

export function fromRow(row: QuarantinedLineRow): QuarantinedLine {
  const bytes = row.line_bytes;
  return {
    path: row.source_path,
    line: row.line_number,
    sha256: row.line_sha256,
    kind: row.migration_kind,
    sourceSha256: row.source_sha256,
    reason: row.reason,
    bytes: Buffer.isBuffer(bytes)
      ? bytes
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    runId: row.run_id,
    quarantinedAt: row.quarantined_at,
  };
}

/** The insert's parameters, every field checked (and the line's hash taken) before a write. */
export function lineParams(entry: NewQuarantinedLine, now: number) {
  if (!Number.isSafeInteger(entry.line) || entry.line < 1) {
    throw new TypeError(`Expected a line number from 1, got ${String(entry.line)}`);
  }
  if (!(entry.bytes instanceof Uint8Array)) {
    throw new TypeError("Expected the quarantined line as a Buffer or Uint8Array");
  }
  const path = checkSourceText("quarantined line path", entry.path);
  return {
    path,
    line: entry.line,
    sha256: createHash("sha256").update(entry.bytes).digest("hex"),
    kind: checkSourceText(`quarantined line ${path}:${entry.line} kind`, entry.kind),
    sourceSha256: checkSourceText(`quarantined line ${path} sourceSha256`, entry.sourceSha256),
    reason: checkText(
      `quarantined line ${path}:${entry.line} reason`,
      entry.reason,
      MAX_ERROR_TEXT,
    ),
    bytes: entry.bytes,
    runId: checkMigrationRunId(entry.runId),
    now: checkTime("quarantinedAt", now),
  };
}

function checkLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${String(limit)}`,
    );
  }
  return limit;
}

/** The list's parameters: one run's lines or every run's (`runId` null). */
export function listParams(options: QuarantineListOptions) {
  const { runId, limit = 1000, ...rest } = options;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new TypeError(`Expected no option named ${unknown.join(", ")}`);
  return {
    runId: runId === undefined ? null : checkMigrationRunId(runId),
    limit: checkLimit(limit),
  };
}
