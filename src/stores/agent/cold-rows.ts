import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import type {
  ArchivedBlob,
  ArchivedEvent,
  ArchiveReader,
  InflatedMembers,
} from "../../transcript/cold-archive.js";
import type { ColdIndexRow } from "./cold-index-rows.js";
import type { ColdIndexClaimRow, ColdSessionRow, EventRow } from "./transcript-rows.js";

/** A session's hot rows as a move reads them (in one snapshot). */
export interface SessionRows {
  sessionNo: number;
  events: ArchivedEvent[];
  blobs: ArchivedBlob[];
  /** What the session's claim on the cold index covers already (0 without one). */
  claimedThrough: number;
  /** The indexed text of its events after that, for the cold index. */
  indexRows: ColdIndexRow[];
  /** False when an event of the session is not indexed yet (appended since the move began). */
  indexed: boolean;
}

/** What a session's rows in the cold index are, by the agent database. */
export type ColdIndexClaim = Pick<ColdIndexClaimRow, "through_seq" | "rows">;

/** The cold row's columns a move supplies. */
export type ColdRowFields = Omit<ColdSessionRow, "session_no">;

interface BlobRow {
  sha256: string;
  mime_type: string | null;
  data: Uint8Array;
  created_at: number;
}

/** The SQL of moving a session's rows out of the hot tables and back. */
export class ColdRows {
  private readonly selectNo: SqlStatement<{ session_no: number }>;
  private readonly selectEvents: SqlStatement<EventRow>;
  private readonly selectRefs: SqlStatement<{ seq: number; sha256: string }>;
  private readonly selectBlobs: SqlStatement<BlobRow>;
  private readonly selectStats: SqlStatement<{ n: number; last: number }>;
  private readonly selectEventTop: SqlStatement<{ top: number }>;
  private readonly selectClaim: SqlStatement<ColdIndexClaim>;
  private readonly selectIndexRows: SqlStatement<ColdIndexRow>;
  private readonly selectUnindexed: SqlStatement<{ found: number }>;
  private readonly claim: SqlStatement;
  private readonly insertCold: SqlStatement;
  private readonly deleteEvents: SqlStatement;
  private readonly markIndexStale: SqlStatement;
  private readonly dropStaleAboveTop: SqlStatement;
  private readonly forgetStaleAboveTop: SqlStatement;
  private readonly dropStale: SqlStatement;
  private readonly forgetStale: SqlStatement;
  private readonly lowerMark: SqlStatement;
  private readonly deleteOrphanBlob: SqlStatement;
  private readonly insertEvent: SqlStatement;
  private readonly insertBlob: SqlStatement;
  private readonly insertRef: SqlStatement;
  private readonly deleteCold: SqlStatement;

  constructor(db: Database) {
    this.selectNo = db.prepareOnUse("SELECT session_no FROM sessions WHERE session_id = ?");
    this.selectEvents = db.prepareOnUse(
      "SELECT * FROM transcript_events WHERE session_no = ? ORDER BY seq",
    );
    this.selectRefs = db.prepareOnUse(
      "SELECT seq, sha256 FROM transcript_blob_refs WHERE session_no = ? ORDER BY seq, sha256",
    );
    this.selectBlobs = db.prepareOnUse(
      `SELECT sha256, mime_type, data, created_at FROM transcript_blobs WHERE sha256 IN
         (SELECT sha256 FROM transcript_blob_refs WHERE session_no = ?) ORDER BY sha256`,
    );
    this.selectStats = db.prepareOnUse(
      "SELECT count(*) AS n, coalesce(max(seq), 0) AS last FROM transcript_events WHERE session_no = ?",
    );
    this.selectEventTop = db.prepareOnUse(
      "SELECT coalesce(max(id), 0) AS top FROM transcript_events",
    );
    this.selectClaim = db.prepareOnUse(
      "SELECT through_seq, rows FROM cold_index_claims WHERE session_no = ?",
    );
    // Read from FTS5's own content table: through the virtual table each row is a seek of its
    // own, 3 to 4 times slower (100 ms against 29 ms for a session of 18,000 events).
    this.selectIndexRows = db.prepareOnUse(
      `SELECT e.seq, f.c0 AS text FROM transcript_events e
       JOIN transcript_fts_content f ON f.id = e.id
       WHERE e.session_no = ? AND e.seq > ? ORDER BY e.seq`,
    );
    this.selectUnindexed = db.prepareOnUse(
      `SELECT EXISTS (SELECT 1 FROM transcript_events WHERE session_no = ? AND id >
         (SELECT indexed_through FROM search_index_state WHERE name = 'transcript')) AS found`,
    );
    this.claim = db.prepareOnUse(
      `INSERT INTO cold_index_claims (session_no, through_seq, rows, text_bytes) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_no) DO UPDATE SET through_seq = excluded.through_seq,
         rows = rows + excluded.rows, text_bytes = text_bytes + excluded.text_bytes`,
    );
    this.insertCold = db.prepareOnUse(
      `INSERT INTO cold_sessions (session_no, archive_path, sha256, bytes, events, first_seq,
         last_seq, last_event_id, last_event_type, last_created_at, moved_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.deleteEvents = db.prepareOnUse("DELETE FROM transcript_events WHERE session_no = ?");
    this.markIndexStale = db.prepareOnUse(
      "INSERT INTO transcript_fts_stale (id) SELECT id FROM transcript_events WHERE session_no = ?",
    );
    // Only ids at or below the largest one left may stay stale (agent/0015_cold_unindex_later.sql).
    const aboveTop = "id > (SELECT coalesce(max(id), 0) FROM transcript_events)";
    this.dropStaleAboveTop = db.prepareOnUse(
      `DELETE FROM transcript_fts WHERE rowid IN (SELECT id FROM transcript_fts_stale WHERE ${aboveTop})`,
    );
    this.forgetStaleAboveTop = db.prepareOnUse(
      `DELETE FROM transcript_fts_stale WHERE ${aboveTop}`,
    );
    this.dropStale = db.prepareOnUse(
      `DELETE FROM transcript_fts WHERE rowid IN
         (SELECT id FROM transcript_fts_stale ORDER BY id LIMIT ?)`,
    );
    this.forgetStale = db.prepareOnUse(
      "DELETE FROM transcript_fts_stale WHERE id IN (SELECT id FROM transcript_fts_stale ORDER BY id LIMIT ?)",
    );
    // What the delete trigger does per event, once: no mark above the largest id left.
    this.lowerMark = db.prepareOnUse(
      `UPDATE search_index_state SET indexed_through = (SELECT coalesce(max(id), 0) FROM transcript_events)
       WHERE name = 'transcript'
         AND indexed_through > (SELECT coalesce(max(id), 0) FROM transcript_events)`,
    );
    this.deleteOrphanBlob = db.prepareOnUse(
      `DELETE FROM transcript_blobs WHERE sha256 = ?
         AND NOT EXISTS (SELECT 1 FROM transcript_blob_refs WHERE sha256 = ?)`,
    );
    this.insertEvent = db.prepareOnUse(
      `INSERT INTO transcript_events
         (session_no, seq, event_id, event_type, parent_id, idempotency_key, created_at, event_json)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.insertBlob = db.prepareOnUse(
      `INSERT INTO transcript_blobs (sha256, mime_type, size_bytes, data, created_at)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING`,
    );
    this.insertRef = db.prepareOnUse(
      "INSERT INTO transcript_blob_refs (session_no, seq, sha256) VALUES (?, ?, ?)",
    );
    this.deleteCold = db.prepareOnUse("DELETE FROM cold_sessions WHERE session_no = ?");
  }

  /** The session's event rows, each with its blob references, and the blobs; undefined without a session. */
  collect(sessionId: string): SessionRows | undefined {
    const sessionNo = this.selectNo.get(sessionId)?.session_no;
    if (sessionNo === undefined) return undefined;
    const refs = new Map<number, string[]>();
    for (const ref of this.selectRefs.all(sessionNo)) {
      refs.set(ref.seq, [...(refs.get(ref.seq) ?? []), ref.sha256]);
    }
    const events = this.selectEvents.all(sessionNo).map(
      (row): ArchivedEvent => ({
        seq: row.seq,
        eventId: row.event_id,
        eventType: row.event_type,
        parentId: row.parent_id,
        idempotencyKey: row.idempotency_key,
        createdAt: row.created_at,
        eventJson: row.event_json,
        blobRefs: refs.get(row.seq) ?? [],
      }),
    );
    const blobs = this.selectBlobs.all(sessionNo).map((row) => ({
      sha256: row.sha256,
      mimeType: row.mime_type,
      createdAt: row.created_at,
      data: Buffer.from(row.data),
    }));
    const claimedThrough = this.claimOf(sessionNo)?.through_seq ?? 0;
    const indexRows = this.selectIndexRows.all(sessionNo, claimedThrough);
    const indexed = this.selectUnindexed.get(sessionNo)?.found === 0;
    return { sessionNo, events, blobs, claimedThrough, indexRows, indexed };
  }

  /** The session's claim on the cold index, if it has one. */
  claimOf(sessionNo: number): ColdIndexClaim | undefined {
    return this.selectClaim.get(sessionNo);
  }

  /** True while the session still holds exactly the rows `found` read (events are only appended). */
  unchanged(found: SessionRows): boolean {
    const stats = this.selectStats.get(found.sessionNo);
    return stats?.n === found.events.length && stats.last === (found.events.at(-1)?.seq ?? 0);
  }

  /**
   * Claims the rows the move wrote to the cold index, records the cold row and deletes the hot
   * rows (their blob references go with them; blobs left unreferenced are deleted). Their rows in
   * transcript_fts are only marked stale, for `purgeStaleIndex` (agent/0015_cold_unindex_later.sql),
   * but those above the largest id left.
   */
  takeOut(found: SessionRows, fields: ColdRowFields): void {
    const textBytes = found.indexRows.reduce((sum, row) => sum + Buffer.byteLength(row.text), 0);
    this.claim.run(found.sessionNo, fields.last_seq, found.indexRows.length, textBytes);
    this.insertCold.run(
      found.sessionNo,
      fields.archive_path,
      fields.sha256,
      fields.bytes,
      fields.events,
      fields.first_seq,
      fields.last_seq,
      fields.last_event_id,
      fields.last_event_type,
      fields.last_created_at,
      fields.moved_at,
    );
    // With the cold row in place the delete trigger stands aside (agent/0013_cold_sessions.sql).
    this.markIndexStale.run(found.sessionNo);
    this.deleteEvents.run(found.sessionNo);
    this.lowerMark.run();
    this.dropStaleAboveTop.run();
    this.forgetStaleAboveTop.run();
    for (const blob of found.blobs) this.deleteOrphanBlob.run(blob.sha256, blob.sha256);
  }

  /**
   * Inserts the archived rows back under new row ids (the old ones may have been reused) and
   * deletes the cold row; `inflated` gives members inflated already (see `inflateAhead`). Their
   * index rows stay in the cold index: the caller marks the new ids indexed.
   */
  putBack(row: ColdSessionRow, reader: ArchiveReader, inflated?: InflatedMembers): void {
    const now = Date.now();
    for (const blob of reader.blobs()) {
      this.insertBlob.run(
        blob.sha256,
        blob.mimeType,
        blob.data.length,
        blob.data,
        blob.createdAt ?? now,
      );
    }
    let count = 0;
    for (const e of reader.eventsAfter(0, inflated)) {
      this.insertEvent.run(
        row.session_no,
        e.seq,
        e.eventId,
        e.eventType,
        e.parentId,
        e.idempotencyKey,
        e.createdAt,
        e.eventJson,
      );
      for (const sha of e.blobRefs) this.insertRef.run(row.session_no, e.seq, sha);
      count++;
    }
    if (count !== row.events) {
      throw new StateError(
        "E_CORRUPT",
        `cold archive ${row.archive_path} holds ${count} events, not ${row.events}`,
      );
    }
    this.deleteCold.run(row.session_no);
  }

  /**
   * Drops up to `limit` stale rows of transcript_fts (left by moves), the lowest ids first, and
   * forgets their ids; returns how many ids it forgot. The caller holds the transaction.
   */
  purgeStaleIndex(limit: number): number {
    this.dropStale.run(limit);
    return this.forgetStale.run(limit).changes;
  }

  /** The largest event row id. */
  topEventId(): number {
    return this.selectEventTop.get()?.top ?? 0;
  }
}
