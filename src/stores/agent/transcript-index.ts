import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import { indexedText, storedEventText } from "../../transcript/indexed-text.js";
import { type OwnRows, UsageRollup } from "./usage-rollup.js";

/** The ids of `run`, in order. */
function* idsOf(run: OwnRows): Generator<number> {
  for (let id = run.first; id <= run.last; id++) yield id;
}

/** Writers index in bulk once this many events wait; fewer wait for a search or an idle moment. */
export const INDEX_PENDING_LIMIT = 64;
/** Events indexed per transaction when a long backlog is worked off (after an upgrade). */
export const CATCH_UP_BATCH = 2000;
/** Quiet time after the last append before a writer indexes what is still pending. */
const IDLE_MS = 1000;

/**
 * The full-text index of transcript events, written behind a watermark
 * (`search_index_state.indexed_through`: every event with an id up to it is indexed) instead of
 * inside each append. See agent/0007_transcript_layout_v2.sql for the contract. The daily usage
 * rollups (agent/0012_usage_rollups.sql) ride on the same bulk step, behind their own watermark.
 */
export class TranscriptIndex {
  private readonly selectMark: SqlStatement<{ indexed_through: number }>;
  private readonly selectBacklog: SqlStatement<{ top: number; mark: number }>;
  private readonly selectPending: SqlStatement<{ id: number; event_json: string }>;
  private readonly selectPendingIds: SqlStatement<{ id: number }>;
  /**
   * The mark as this connection last saw it. Only an estimate (another connection may move it):
   * it decides when to index, and indexPending reads the real mark in its transaction.
   */
  private seenMark: number | undefined;
  /**
   * The indexed text of events this connection appended and has not indexed yet, by id: indexed
   * (or matched by a search) without reading and parsing their rows again. Text, not the event:
   * the caller owns the event object it gets back and may change it.
   */
  private readonly fresh = new Map<number, string>();
  /** `db.rollbacks` when `fresh` was started: a rollback since may have undone its rows. */
  private freshSince = 0;
  /** `PRAGMA data_version` when `fresh` took its first text (see `ownedRun`). */
  private freshVersion: number | undefined;
  private readonly selectVersion: SqlStatement<{ data_version: number }>;
  private readonly selectAbove: SqlStatement<{ n: number; top: number | null }>;
  private readonly insertText: SqlStatement;
  private readonly updateMark: SqlStatement;
  private idleTimer: NodeJS.Timeout | undefined;
  private stopsOnClose = false;
  private lastAppendAt = 0;
  private readonly rollup: UsageRollup;

  constructor(private readonly db: Database) {
    this.rollup = new UsageRollup(db);
    this.selectMark = db.prepareOnUse(
      "SELECT indexed_through FROM search_index_state WHERE name = 'transcript'",
    );
    this.selectBacklog = db.prepareOnUse(
      `SELECT (SELECT coalesce(max(id), 0) FROM transcript_events) AS top, indexed_through AS mark
       FROM search_index_state WHERE name = 'transcript'`,
    );
    this.selectPending = db.prepareOnUse(
      "SELECT id, event_json FROM transcript_events WHERE id > ? ORDER BY id LIMIT ?",
    );
    this.selectPendingIds = db.prepareOnUse(
      "SELECT id FROM transcript_events WHERE id > ? ORDER BY id LIMIT ?",
    );
    this.insertText = db.prepareOnUse("INSERT INTO transcript_fts (rowid, text) VALUES (?, ?)");
    this.selectVersion = db.prepareOnUse("PRAGMA data_version");
    this.selectAbove = db.prepareOnUse(
      "SELECT count(*) AS n, max(id) AS top FROM transcript_events WHERE id > ?",
    );
    this.updateMark = db.prepareOnUse(
      "UPDATE search_index_state SET indexed_through = ? WHERE name = 'transcript'",
    );
  }

  /** The id up to which every event is indexed. */
  mark(): number {
    this.seenMark = this.selectMark.get()?.indexed_through ?? 0;
    return this.seenMark;
  }

  /**
   * How many event ids lie above the mark (an upper bound on the events not indexed yet), or
   * above the usage rollups' mark when that one is further behind (a database just upgraded).
   */
  backlog(): number {
    return Math.max(this.unindexed(), this.rollup.backlog());
  }

  /** How many event ids lie above the search index's mark (an upper bound on its backlog). */
  unindexed(): number {
    const row = this.selectBacklog.get();
    return row === undefined ? 0 : Math.max(0, row.top - row.mark);
  }

  /**
   * Called by an append transaction with each event it wrote: indexes the backlog in this same
   * transaction once it reaches INDEX_PENDING_LIMIT, else leaves it for later. No query: the
   * events are kept (at most the limit of them) and the mark is this connection's last view.
   */
  noteAppended(id: number, event: TranscriptEvent, createdAt: number): void {
    this.dropIfRolledBack();
    if (this.fresh.size === 0) this.freshVersion = this.selectVersion.get()?.data_version;
    this.fresh.set(id, indexedText(event));
    this.rollup.note(id, event, createdAt);
  }

  /**
   * The indexed texts of events this connection appended and has not indexed yet, in the order
   * of `ids`; undefined when one is not held.
   */
  heldTexts(ids: Iterable<number>): string[] | undefined {
    this.dropStale();
    return this.textsOf(ids);
  }

  /** `heldTexts` without `dropStale`, for a caller that has just run it. */
  private textsOf(ids: Iterable<number>): string[] | undefined {
    const texts: string[] = [];
    for (const id of ids) {
      const text = this.fresh.get(id);
      if (text === undefined) return undefined;
      texts.push(text);
    }
    return texts;
  }

  private dropIfRolledBack(): void {
    if (this.db.rollbacks === this.freshSince) return;
    this.fresh.clear();
    this.freshSince = this.db.rollbacks;
  }

  /**
   * Forgets the held texts when they may no longer be their rows': after a rollback, or once
   * another connection has committed (`PRAGMA data_version` moved), since it may have deleted
   * them and given their ids to its own events. Held by id alone, a text would then be indexed,
   * or matched, for another event: the deleted words found under it, its own not.
   */
  private dropStale(): void {
    this.dropIfRolledBack();
    if (this.fresh.size === 0) return;
    if (this.selectVersion.get()?.data_version !== this.freshVersion) this.fresh.clear();
  }

  /**
   * Called at the end of an append transaction's body. `written`: the ids that body itself
   * inserted (see `OwnRows`).
   */
  afterAppend(written: OwnRows): void {
    const mark = this.seenMark ?? this.mark();
    if (written.last - mark >= INDEX_PENDING_LIMIT) this.indexPending(undefined, written);
    else this.scheduleIdle();
  }

  /**
   * The ids above `mark`, up to `written.last`, with their held texts, when this connection can
   * show it wrote them all; else undefined (the rows are read back). Shown when a text is held
   * for every id and the ids are `written`'s alone, or the table holds exactly those ids above
   * the mark. Called after `dropStale`, so no other connection has committed since the first held
   * text was noted. Then no row of them was deleted or replaced since: only this connection
   * wrote; a row it deleted would be missing from the count (or its id taken again by a noted
   * append, whose text replaced the held one); a row it wrote without noting would lie past the
   * last id or between held ones; and a cold restore or move indexes everything pending before it
   * writes. A single append's bulk step then reads none of the 63 rows before it back.
   */
  private ownedRun(mark: number, written: OwnRows): { run: OwnRows; texts: string[] } | undefined {
    const run = { first: mark + 1, last: written.last };
    if (written.first < run.first) return undefined;
    const texts = this.textsOf(idsOf(run));
    if (texts === undefined) return undefined;
    if (written.first > run.first) {
      const above = this.selectAbove.get(mark);
      if (above?.n !== run.last - mark || above.top !== run.last) return undefined;
    }
    return { run, texts };
  }

  /**
   * Indexes every event above the mark, inside the caller's transaction (or one of its own),
   * and moves the mark; counts the events above the usage rollups' mark the same way. Returns how
   * many events were read (by the index or the rollups, whichever had more to do). With `own`,
   * rows that body wrote are taken from memory without reading them back (see `OwnRows`).
   */
  indexPending(limit = Number.MAX_SAFE_INTEGER, own?: OwnRows): number {
    return this.db.tx(() => {
      this.dropStale();
      let mark = this.mark();
      let read = 0;
      const owned = own === undefined ? undefined : this.ownedRun(mark, own);
      if (owned !== undefined) {
        owned.texts.forEach((text, i) => {
          if (text !== "") this.insertText.run(owned.run.first + i, text);
        });
        read = owned.texts.length;
        mark = owned.run.last;
      }
      while (read < limit) {
        const count = Math.min(CATCH_UP_BATCH, limit - read);
        const ids = this.selectPendingIds.all(mark, count);
        if (ids.length === 0) break;
        const texts = this.pendingTexts(mark, ids, count);
        for (const row of ids) {
          const text = texts.get(row.id) ?? "";
          if (text !== "") this.insertText.run(row.id, text);
        }
        read += ids.length;
        mark = ids[ids.length - 1]?.id ?? mark;
      }
      this.updateMark.run(mark);
      this.seenMark = mark;
      this.fresh.clear();
      return Math.max(read, this.rollup.rollUp(limit, owned?.run));
    });
  }

  /** The indexed texts of `ids`: this connection's own from memory, the rest from their rows. */
  private pendingTexts(
    mark: number,
    ids: readonly { id: number }[],
    count: number,
  ): Map<number, string> {
    const texts = new Map<number, string>();
    this.dropIfRolledBack();
    for (const { id } of ids) {
      const text = this.fresh.get(id);
      if (text !== undefined) texts.set(id, text);
    }
    if (texts.size < ids.length) {
      // Fetched in slices too: a statement still stepping would block the inserts.
      for (const row of this.selectPending.all(mark, count)) {
        if (!texts.has(row.id)) {
          texts.set(row.id, storedEventText(row.event_json));
        }
      }
    }
    return texts;
  }

  /**
   * Moves the mark to `id` for rows the caller indexed itself (a restore of a cold session gives
   * its index rows back), and the usage rollups' mark too (they kept counting the session while it
   * was cold). Only right inside the transaction of an `indexPending()` that left no event above
   * the marks but those.
   */
  coverThrough(id: number): void {
    this.updateMark.run(id);
    this.seenMark = id;
    this.rollup.coverThrough(id);
  }

  /**
   * Works off a long backlog (an upgraded database, an index dropped by hand) in transactions of
   * a bounded size, so no writer waits long for the lock.
   */
  catchUp(onProgress?: (done: number, total: number) => void): number {
    const total = this.backlog();
    let done = 0;
    for (let read = -1; read !== 0 && this.backlog() > 0; ) {
      read = this.indexPending(CATCH_UP_BATCH);
      done += read;
      onProgress?.(Math.min(done, total), total);
    }
    return done;
  }

  /**
   * Works off whatever backlog the agent has when a writable home first opens it: the few events
   * a writer closed with, or an upgraded database's whole history (in batches, not all in the
   * first search's transaction). Then the published search view holds every event again.
   */
  catchUpAtOpen(onProgress?: (done: number, total: number) => void): number {
    return this.backlog() > 0 ? this.catchUp(onProgress) : 0;
  }

  /** Stops the idle timer (the database is closing). */
  stop(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  /**
   * A writer that goes quiet indexes what it left pending, so searches rarely have events to
   * match themselves and the published search view soon holds every event. Unref'd: it never
   * keeps a process alive, and a failure only leaves the work to the next append or open.
   */
  private scheduleIdle(): void {
    this.lastAppendAt = Date.now();
    if (!this.stopsOnClose) {
      this.stopsOnClose = true;
      this.db.onClose(() => this.stop());
    }
    // One timer at a time, pushed back while appends keep coming: a timer per append would cost
    // more than the append.
    if (this.idleTimer === undefined) this.armIdle(IDLE_MS);
  }

  private armIdle(delay: number): void {
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      const quietFor = Date.now() - this.lastAppendAt;
      if (quietFor < IDLE_MS) return this.armIdle(IDLE_MS - quietFor);
      try {
        if (this.db.isOpen && this.backlog() > 0) this.indexPending();
      } catch {
        // Busy or closed: the next batch of appends, or the next open, indexes the backlog.
      }
    }, delay);
    this.idleTimer.unref();
  }
}
