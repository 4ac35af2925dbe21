import { randomUUID } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { buildContext, type ContextEntry } from "../../transcript/context.js";
import type { JsonValue } from "../json.js";
import { toJson } from "../json.js";
import type { TranscriptBranches } from "./transcript-branches.js";
import type { SessionInfo, SnapshotRow } from "./transcript-rows.js";
import type { TranscriptStore } from "./transcript-store.js";

export interface TranscriptSnapshot {
  sessionId: string;
  snapshotId: string;
  reason: string;
  /** Events in the session when the snapshot was taken (its seq high-water mark). */
  eventCount: number;
  /** The leaf when the snapshot was taken. */
  leafEventId: string | null;
  createdAt: number;
  metadata: { [key: string]: JsonValue };
}

export interface NewSnapshot {
  reason: string;
  snapshotId?: string;
  metadata?: { [key: string]: JsonValue };
}

function fromRow(row: SnapshotRow): TranscriptSnapshot {
  const metadata = JSON.parse(row.metadata_json) as { [key: string]: JsonValue };
  const leaf = metadata.leafEventId;
  return {
    sessionId: row.session_id,
    snapshotId: row.snapshot_id,
    reason: row.reason,
    eventCount: row.event_count,
    leafEventId: typeof leaf === "string" ? leaf : null,
    createdAt: row.created_at,
    metadata,
  };
}

/**
 * Named points in a session's log (compaction checkpoints, manual marks). A snapshot is two
 * numbers, not a copy: the seq high-water mark and the leaf. Restoring reads the rows up to it.
 */
export class SnapshotStore {
  private readonly insert: SqlStatement;
  private readonly selectOne: SqlStatement<SnapshotRow>;
  private readonly selectAll: SqlStatement<SnapshotRow>;

  constructor(
    private readonly db: Database,
    private readonly transcripts: TranscriptStore,
    private readonly branches: TranscriptBranches,
  ) {
    this.insert = db.prepare(
      `INSERT INTO transcript_snapshots (session_id, snapshot_id, reason, event_count, created_at, metadata_json)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.selectOne = db.prepare(
      "SELECT * FROM transcript_snapshots WHERE session_id = ? AND snapshot_id = ?",
    );
    this.selectAll = db.prepare(
      "SELECT * FROM transcript_snapshots WHERE session_id = ? ORDER BY created_at, snapshot_id",
    );
  }

  create(sessionId: string, input: NewSnapshot): TranscriptSnapshot {
    return this.db.tx(() => {
      const session = this.branches.session(sessionId);
      const snapshotId = input.snapshotId ?? randomUUID();
      const metadata = { ...input.metadata, leafEventId: session.leafEventId };
      const json = toJson(metadata, `snapshot metadata for ${sessionId}`);
      this.insert.run(sessionId, snapshotId, input.reason, session.eventCount, Date.now(), json);
      return this.get(sessionId, snapshotId);
    });
  }

  get(sessionId: string, snapshotId: string): TranscriptSnapshot {
    const row = this.selectOne.get(sessionId, snapshotId);
    if (!row) {
      throw new StateError("E_NOT_FOUND", `no snapshot ${snapshotId} in session ${sessionId}`, {
        details: { sessionId, snapshotId },
      });
    }
    return fromRow(row);
  }

  list(sessionId: string): TranscriptSnapshot[] {
    return this.selectAll.all(sessionId).map(fromRow);
  }

  /** The model context as it was when the snapshot was taken. */
  restore(sessionId: string, snapshotId: string): ContextEntry[] {
    const snapshot = this.get(sessionId, snapshotId);
    const events = [...this.transcripts.events(sessionId, snapshot.eventCount)].map((s) => s.event);
    return buildContext(events, snapshot.leafEventId ? { leafId: snapshot.leafEventId } : {});
  }

  /** A new session holding the branch that was current at the snapshot. */
  branch(
    sessionId: string,
    snapshotId: string,
    options: { newSessionId?: string } = {},
  ): SessionInfo {
    const snapshot = this.get(sessionId, snapshotId);
    return this.branches.fork(sessionId, {
      ...(snapshot.leafEventId ? { fromEventId: snapshot.leafEventId } : {}),
      ...options,
      reason: "snapshot-branch",
    });
  }
}
