import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import type { ColdIndexClaimRow } from "./transcript-rows.js";

/** Hot events read per statement while a claimed session is read back. */
const HOT_PAGE = 500;

/** A session's claim on the cold index, with what its rows are to be made of. */
export interface ClaimedSession {
  sessionNo: number;
  sessionId: string;
  /** The claim covers the session's events up to this seq. */
  throughSeq: number;
  rows: number;
  textBytes: number;
  /** True while the session is cold (its events are in its archive), false once restored. */
  cold: boolean;
}

/** What a claim is to say: its rows up to `throughSeq`, their count and text bytes. */
export type ClaimFigures = Pick<ClaimedSession, "sessionNo" | "throughSeq" | "rows" | "textBytes">;

/** A stored event as the cold index is made of it. */
export interface ClaimedEvent {
  seq: number;
  eventJson: string;
}

interface ClaimedSessionRow extends ColdIndexClaimRow {
  session_id: string;
  cold: number;
}

/**
 * The agent database's claims on its cold index (agent/0017_cold_index_file.sql) read and written
 * whole, for a cold index built again from the events the claims cover: a cold session's are in
 * its archive, a restored session's are hot again (a restore leaves its rows and claim there).
 */
export class ColdClaims {
  private readonly selectAll: SqlStatement<ClaimedSessionRow>;
  private readonly selectHot: SqlStatement<{ seq: number; event_json: string }>;
  private readonly update: SqlStatement;

  constructor(db: Database) {
    this.selectAll = db.prepareOnUse(
      `SELECT k.*, s.session_id, c.session_no IS NOT NULL AS cold
       FROM cold_index_claims k JOIN sessions s ON s.session_no = k.session_no
       LEFT JOIN cold_sessions c ON c.session_no = k.session_no ORDER BY k.session_no`,
    );
    this.selectHot = db.prepareOnUse(
      `SELECT seq, event_json FROM transcript_events
       WHERE session_no = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ${HOT_PAGE}`,
    );
    this.update = db.prepareOnUse(
      "UPDATE cold_index_claims SET through_seq = ?, rows = ?, text_bytes = ? WHERE session_no = ?",
    );
  }

  /** Every claim, by session number. */
  list(): ClaimedSession[] {
    return this.selectAll.all().map((row) => ({
      sessionNo: row.session_no,
      sessionId: row.session_id,
      throughSeq: row.through_seq,
      rows: row.rows,
      textBytes: row.text_bytes,
      cold: row.cold === 1,
    }));
  }

  /**
   * A restored session's events up to `throughSeq`, in seq order, a page per statement: no
   * statement stays open between pages, and a long session is never held in memory whole.
   */
  *hotEvents(sessionNo: number, throughSeq: number): IterableIterator<ClaimedEvent> {
    for (let after = 0; ; ) {
      const page = this.selectHot.all(sessionNo, after, throughSeq);
      for (const row of page) yield { seq: row.seq, eventJson: row.event_json };
      if (page.length < HOT_PAGE) return;
      after = (page.at(-1) as { seq: number }).seq;
    }
  }

  /** Sets what each claim says; the caller holds the transaction. */
  rewrite(claims: readonly ClaimFigures[]): void {
    for (const claim of claims) {
      this.update.run(claim.throughSeq, claim.rows, claim.textBytes, claim.sessionNo);
    }
  }
}
