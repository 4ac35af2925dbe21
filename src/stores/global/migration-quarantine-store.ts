import { createHash } from "node:crypto";
import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";

const MAX_LIST_LIMIT = 100_000;

interface QuarantinedLineRow {
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

function fromRow(row: QuarantinedLineRow): QuarantinedLine {
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

function checkLine(entry: NewQuarantinedLine): void {
  if (!Number.isSafeInteger(entry.line) || entry.line < 1) {
    throw new TypeError(`Expected a line number from 1, got ${String(entry.line)}`);
  }
  if (!(entry.bytes instanceof Uint8Array)) {
    throw new TypeError("Expected the quarantined line as a Buffer or Uint8Array");
  }
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

/**
 * `migration_quarantine` in the global database: the lines of legacy sources that could not be
 * imported, kept as BLOBs with where they came from and why, so that the source can be removed.
 */
export class MigrationQuarantineStore {
  private readonly insert: SqlStatement;
  private readonly selectAll: SqlStatement<QuarantinedLineRow>;
  private readonly selectRun: SqlStatement<QuarantinedLineRow>;
  private readonly selectCounts: SqlStatement<{ run_id: string; lines: number }>;

  constructor(db: Database) {
    this.insert = db.prepare(
      `INSERT INTO migration_quarantine (source_path, line_number, line_sha256, migration_kind,
         source_sha256, reason, line_bytes, run_id, quarantined_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (source_path, line_number, line_sha256) DO NOTHING`,
    );
    this.selectAll = db.prepare(
      "SELECT * FROM migration_quarantine ORDER BY source_path, line_number LIMIT ?",
    );
    this.selectRun = db.prepare(
      "SELECT * FROM migration_quarantine WHERE run_id = ? ORDER BY source_path, line_number LIMIT ?",
    );
    this.selectCounts = db.prepare(
      "SELECT run_id, count(*) AS lines FROM migration_quarantine GROUP BY run_id",
    );
  }

  /**
   * Keeps a line; returns false when the same bytes of the same line of that path are already
   * kept (a rerun), so a line is never quarantined twice.
   */
  add(entry: NewQuarantinedLine, now: number = Date.now()): boolean {
    checkLine(entry);
    const sha256 = createHash("sha256").update(entry.bytes).digest("hex");
    const result = this.insert.run(
      entry.path,
      entry.line,
      sha256,
      entry.kind,
      entry.sourceSha256,
      entry.reason,
      entry.bytes,
      entry.runId,
      now,
    );
    return result.changes === 1;
  }

  /** Quarantined lines by path and line number; every run's, or one run's. */
  list(options: QuarantineListOptions = {}): QuarantinedLine[] {
    const { runId, limit = 1000, ...rest } = options;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw new TypeError(`Expected no option named ${unknown.join(", ")}`);
    const rows =
      runId === undefined
        ? this.selectAll.all(checkLimit(limit))
        : this.selectRun.all(runId, checkLimit(limit));
    return rows.map(fromRow);
  }

  /** How many lines each migration run quarantined (runs that quarantined none are absent). */
  countsByRun(): Map<string, number> {
    return new Map(this.selectCounts.all().map((row) => [row.run_id, row.lines]));
  }
}
