import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { checkPrintableId } from "../../ids.js";
import { toBuffer } from "../../vfs/chunks.js";
import { descendantRange, normalizeVfsPath, VFS_ROOT } from "../../vfs/path.js";
import { metadataJsonOf, type VfsMetadata } from "./vfs-options.js";

/** One artifact is one BLOB row; larger outputs belong in the VFS (chunked, streamed). */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;
const MAX_ID_LENGTH = 256;
const KIND = /^[A-Za-z0-9][A-Za-z0-9._/+-]{0,63}$/;

interface ToolArtifactRow {
  run_id: string;
  artifact_id: string;
  kind: string;
  metadata_json: string;
  blob: Uint8Array | null;
  created_at: number;
}

interface RunArtifactRow {
  run_id: string;
  path: string;
  kind: string;
  metadata_json: string;
  blob: Uint8Array | null;
  created_at: number;
}

export const TOOL_ARTIFACT_COLUMNS = columnsOf<ToolArtifactRow>()(
  "run_id",
  "artifact_id",
  "kind",
  "metadata_json",
  "blob",
  "created_at",
);
export const RUN_ARTIFACT_COLUMNS = columnsOf<RunArtifactRow>()(
  "run_id",
  "path",
  "kind",
  "metadata_json",
  "blob",
  "created_at",
);

export interface NewArtifact {
  /** What the bytes are (`image/png`, `trajectory`, `log` …): 1–64 of `A-Za-z0-9._/+-`. */
  kind: string;
  data?: string | Uint8Array | null;
  metadata?: VfsMetadata;
}

/** An artifact without its bytes, as lists return it. */
export interface ArtifactInfo {
  runId: string;
  /** The artifact id (tool artifacts) or canonical path (run artifacts). */
  name: string;
  kind: string;
  metadata: VfsMetadata;
  size: number;
  createdAt: number;
}

export interface Artifact extends ArtifactInfo {
  data: Buffer | null;
}

interface InfoRow {
  run_id: string;
  name: string;
  kind: string;
  metadata_json: string;
  size: number | null;
  created_at: number;
}

function checkId(what: string, value: unknown): string {
  return checkPrintableId(what, value, "", MAX_ID_LENGTH);
}

function infoOf(row: InfoRow): ArtifactInfo {
  return {
    runId: row.run_id,
    name: row.name,
    kind: row.kind,
    metadata: JSON.parse(row.metadata_json) as VfsMetadata,
    size: row.size ?? 0,
    createdAt: row.created_at,
  };
}

/** The rows of one artifact table; the two public stores differ only in their key column. */
class ArtifactRows {
  private readonly upsert: SqlStatement;
  private readonly selectOne: SqlStatement<InfoRow & { blob: Uint8Array | null }>;
  private readonly selectRun: SqlStatement<InfoRow>;
  private readonly selectRange: SqlStatement<InfoRow>;
  private readonly deleteOne: SqlStatement;
  private readonly deleteAll: SqlStatement;

  constructor(
    db: Database,
    table: "tool_artifacts" | "run_artifacts",
    key: "artifact_id" | "path",
  ) {
    const info = `run_id, ${key} AS name, kind, metadata_json, length(blob) AS size, created_at`;
    this.upsert = db.prepare(
      `INSERT INTO ${table} (run_id, ${key}, kind, metadata_json, blob, created_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id, ${key}) DO UPDATE SET kind = excluded.kind, metadata_json = excluded.metadata_json,
         blob = excluded.blob, created_at = excluded.created_at`,
    );
    this.selectOne = db.prepare(
      `SELECT ${info}, blob FROM ${table} WHERE run_id = ? AND ${key} = ?`,
    );
    this.selectRun = db.prepare(`SELECT ${info} FROM ${table} WHERE run_id = ? ORDER BY ${key}`);
    this.selectRange = db.prepare(
      `SELECT ${info} FROM ${table} WHERE run_id = ? AND ${key} >= ? AND ${key} < ? ORDER BY ${key}`,
    );
    this.deleteOne = db.prepare(`DELETE FROM ${table} WHERE run_id = ? AND ${key} = ?`);
    this.deleteAll = db.prepare(`DELETE FROM ${table} WHERE run_id = ?`);
  }

  put(runId: string, name: string, artifact: NewArtifact, where: string): Artifact {
    if (typeof artifact !== "object" || artifact === null) {
      throw new TypeError(`Expected an artifact object for ${where}`);
    }
    if (typeof artifact.kind !== "string" || !KIND.test(artifact.kind)) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `${where}: kind must be 1 to 64 of A-Za-z0-9._/+- (got ${JSON.stringify(artifact.kind)})`,
      );
    }
    const data =
      artifact.data === undefined || artifact.data === null ? null : toBuffer(artifact.data);
    if (data && data.length > MAX_ARTIFACT_BYTES) {
      throw new StateError(
        "E_TOO_LARGE",
        `${where} is ${data.length} bytes; the limit is ${MAX_ARTIFACT_BYTES} (store large outputs in the VFS and reference them)`,
        { details: { runId, name, bytes: data.length, limit: MAX_ARTIFACT_BYTES } },
      );
    }
    const metadataJson = metadataJsonOf(artifact.metadata, where);
    const createdAt = Date.now();
    this.upsert.run(runId, name, artifact.kind, metadataJson, data, createdAt);
    const metadata = JSON.parse(metadataJson) as VfsMetadata;
    return { runId, name, kind: artifact.kind, metadata, size: data?.length ?? 0, createdAt, data };
  }

  get(runId: string, name: string): Artifact | undefined {
    const row = this.selectOne.get(runId, name);
    if (!row) return undefined;
    return { ...infoOf(row), data: row.blob ? toBuffer(row.blob) : null };
  }

  /** A run's rows in key order; with a range, only keys in [from, to). */
  list(runId: string, range?: readonly [string, string]): ArtifactInfo[] {
    const rows = range ? this.selectRange.all(runId, ...range) : this.selectRun.all(runId);
    return rows.map(infoOf);
  }

  delete(runId: string, name: string): boolean {
    return this.deleteOne.run(runId, name).changes > 0;
  }

  deleteRun(runId: string): number {
    return this.deleteAll.run(runId).changes;
  }
}

/** Outputs of tool calls, by `(runId, artifactId)`: BLOB contents plus small JSON metadata. */
export class ToolArtifactStore {
  private readonly rows: ArtifactRows;

  constructor(db: Database) {
    this.rows = new ArtifactRows(db, "tool_artifacts", "artifact_id");
  }

  /** Stores (or replaces) an artifact. */
  put(runId: string, artifactId: string, artifact: NewArtifact): Artifact {
    checkId("run id", runId);
    checkId("artifact id", artifactId);
    return this.rows.put(runId, artifactId, artifact, `tool artifact ${runId}/${artifactId}`);
  }

  get(runId: string, artifactId: string): Artifact | undefined {
    return this.rows.get(checkId("run id", runId), checkId("artifact id", artifactId));
  }

  /** A run's artifacts by id, without their bytes. */
  list(runId: string): ArtifactInfo[] {
    return this.rows.list(checkId("run id", runId));
  }

  delete(runId: string, artifactId: string): boolean {
    return this.rows.delete(checkId("run id", runId), checkId("artifact id", artifactId));
  }

  /** Deletes every artifact of a run; returns how many. */
  deleteRun(runId: string): number {
    return this.rows.deleteRun(checkId("run id", runId));
  }
}

/** Files a run produced, by `(runId, path)`; paths are canonical VFS paths (`/a/b`). */
export class RunArtifactStore {
  private readonly rows: ArtifactRows;

  constructor(db: Database) {
    this.rows = new ArtifactRows(db, "run_artifacts", "path");
  }

  put(runId: string, path: string, artifact: NewArtifact): Artifact {
    const canonical = this.filePath(path);
    return this.rows.put(
      checkId("run id", runId),
      canonical,
      artifact,
      `run artifact ${runId}:${canonical}`,
    );
  }

  get(runId: string, path: string): Artifact | undefined {
    return this.rows.get(checkId("run id", runId), this.filePath(path));
  }

  /** A run's artifacts in path order, optionally only those below a directory. */
  list(runId: string, options: { under?: string } = {}): ArtifactInfo[] {
    const under = normalizeVfsPath(options.under ?? VFS_ROOT);
    return this.rows.list(checkId("run id", runId), descendantRange(under));
  }

  delete(runId: string, path: string): boolean {
    return this.rows.delete(checkId("run id", runId), this.filePath(path));
  }

  deleteRun(runId: string): number {
    return this.rows.deleteRun(checkId("run id", runId));
  }

  private filePath(path: string): string {
    const canonical = normalizeVfsPath(path);
    if (canonical === VFS_ROOT) {
      throw new StateError("E_PATH", `run artifact path ${JSON.stringify(path)} names the root`, {
        details: { path },
      });
    }
    return canonical;
  }
}
