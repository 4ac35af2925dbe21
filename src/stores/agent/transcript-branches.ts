import { randomUUID } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import { checkSessionId } from "../../ids.js";
import { buildContext, type ContextEntry } from "../../transcript/context.js";
import { parentIdOf, type TranscriptEvent } from "../../transcript/event.js";
import { TranscriptTree } from "../../transcript/tree.js";
import {
  SESSION_WITH_TAIL,
  type SessionInfo,
  type SessionTailRow,
  sessionFromRow,
} from "./transcript-rows.js";
import type { AppendResult, TranscriptStore } from "./transcript-store.js";

export interface ForkOptions {
  /** Copy the branch ending at this event (default: the current leaf). */
  fromEventId?: string;
  /** Id of the new session (default: a new UUID). */
  newSessionId?: string;
  /** Routing key of the new session (default: the source session's). */
  sessionKey?: string | null;
  /** Why the new session exists, recorded as its reset reason (default "fork"). */
  reason?: string;
}

interface TreeRow {
  event_id: string;
  parent_id: string | null;
  event_type: string;
}

/**
 * The tree side of a transcript: which branch is current, moving between branches, labels,
 * forks into new sessions, and the model context of a branch. Works on the key columns of the
 * event rows where it can, so walking the tree never parses event JSON.
 */
export class TranscriptBranches {
  private readonly selectSession: SqlStatement<SessionTailRow>;
  private readonly selectTree: SqlStatement<TreeRow>;
  private readonly updateLeaf: SqlStatement;
  private readonly insertSession: SqlStatement;

  constructor(
    private readonly db: Database,
    private readonly transcripts: TranscriptStore,
  ) {
    this.selectSession = db.prepare(`${SESSION_WITH_TAIL} WHERE s.session_id = ?`);
    this.selectTree = db.prepare(
      `SELECT event_id, parent_id, event_type FROM transcript_events
       WHERE session_no = (SELECT session_no FROM sessions WHERE session_id = ?) ORDER BY seq`,
    );
    // The leaf moves by an override that holds while the log still ends where it ended now.
    this.updateLeaf = db.prepare(
      `UPDATE sessions SET leaf_override_id = ?, leaf_override_seq =
         (SELECT coalesce(max(seq), 0) FROM transcript_events WHERE session_no = sessions.session_no)
       WHERE session_id = ?`,
    );
    this.insertSession = db.prepare(
      `INSERT INTO sessions (session_id, session_key, created_at, updated_at, reset_reason, predecessor_id)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
  }

  session(sessionId: string): SessionInfo {
    const row = this.selectSession.get(checkSessionId(sessionId));
    if (!row) {
      throw new StateError(
        "E_NOT_FOUND",
        `no session ${sessionId} for agent ${this.transcripts.agentId}`,
        {
          details: { agentId: this.transcripts.agentId, sessionId },
        },
      );
    }
    return sessionFromRow(row);
  }

  /** The event tree of a session (header excluded). */
  tree(sessionId: string): TranscriptTree {
    const rows = this.selectTree.all(checkSessionId(sessionId));
    if (rows.length === 0) {
      // A cold session's tree comes from its archive (through the cold-aware event reads).
      return TranscriptTree.from(
        [...this.transcripts.events(sessionId)].map(({ event }) => ({
          id: event.id,
          type: event.type,
          parentId: parentIdOf(event),
        })),
      );
    }
    return TranscriptTree.from(
      rows.map((row) => ({ id: row.event_id, type: row.event_type, parentId: row.parent_id })),
    );
  }

  /** The current leaf: where the next append attaches. */
  leaf(sessionId: string): string | null {
    return this.session(sessionId).leafEventId;
  }

  /**
   * Makes `eventId` the current leaf, so the next append starts a new branch from it. With a
   * summary, records a `branch_summary` event (parented on `eventId`) that says what the
   * abandoned branch did, and that event becomes the leaf.
   */
  branch(sessionId: string, eventId: string, options: { summary?: string } = {}): string {
    // The leaf override is kept against the hot rows: a cold session comes back first.
    this.transcripts.cold.restore(checkSessionId(sessionId));
    return this.db.tx(() => {
      const from = this.session(sessionId).leafEventId;
      this.requireEvent(sessionId, eventId);
      if (options.summary === undefined) {
        this.updateLeaf.run(eventId, sessionId);
        return eventId;
      }
      const result = this.transcripts.append(sessionId, {
        type: "branch_summary",
        parentId: eventId,
        fromId: from,
        summary: options.summary,
      });
      return result.event.id;
    });
  }

  /** Attaches a label to an event, as a `label` event on the current branch. */
  label(sessionId: string, targetId: string, label: string | null): AppendResult {
    this.transcripts.cold.restore(checkSessionId(sessionId));
    return this.db.tx(() => {
      this.requireEvent(sessionId, targetId);
      return this.transcripts.append(sessionId, { type: "label", targetId, label });
    });
  }

  /** Model context of a branch (default: the current leaf), honouring compaction. */
  context(sessionId: string, options: { leafId?: string } = {}): ContextEntry[] {
    const session = this.session(sessionId);
    const events = [...this.transcripts.events(sessionId)].map((stored) => stored.event);
    const leafId = options.leafId ?? session.leafEventId ?? undefined;
    return buildContext(events, leafId === undefined ? {} : { leafId });
  }

  /**
   * Copies one branch (root to `fromEventId`) into a new session whose header names its parent
   * session. Ids and parent links are kept, so the copy is the same conversation, independent
   * from here on.
   */
  fork(sessionId: string, options: ForkOptions = {}): SessionInfo {
    return this.db.tx(() => {
      const source = this.session(sessionId);
      const leaf = options.fromEventId ?? source.leafEventId;
      const newId = checkSessionId(options.newSessionId ?? randomUUID());
      const now = Date.now();
      const key = options.sessionKey === undefined ? source.sessionKey : options.sessionKey;
      this.insertSession.run(newId, key, now, now, options.reason ?? "fork", sessionId);
      const header = this.headerOf(sessionId);
      const copy: TranscriptEvent = {
        type: "session",
        version: header?.version ?? 3,
        id: newId,
        timestamp: new Date(now).toISOString(),
        ...(header?.cwd === undefined ? {} : { cwd: header.cwd }),
        parentSession: sessionId,
      };
      this.transcripts.append(newId, copy, { verbatim: true });
      if (leaf) {
        this.requireEvent(sessionId, leaf);
        const path = this.tree(sessionId).pathTo(leaf);
        const byId = new Map(path.map((id) => [id, this.transcripts.get(sessionId, id)?.event]));
        for (const id of path) {
          const event = byId.get(id);
          if (event) this.transcripts.append(newId, event, { verbatim: true });
        }
      }
      return this.session(newId);
    });
  }

  private headerOf(sessionId: string): TranscriptEvent | undefined {
    const first = this.transcripts.read(sessionId, { limit: 1 })[0]?.event;
    return first?.type === "session" ? first : undefined;
  }

  private requireEvent(sessionId: string, eventId: string): void {
    const stored = this.transcripts.get(sessionId, eventId);
    if (!stored || stored.event.type === "session") {
      throw new StateError("E_NOT_FOUND", `no event ${eventId} in session ${sessionId}`, {
        details: { sessionId, eventId },
      });
    }
  }
}
