import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions, checkText } from "../checks.js";

interface TuiLastSessionRow {
  scope_key: string;
  session_key: string;
  updated_at: number;
}

export const TUI_LAST_SESSION_COLUMNS = columnsOf<TuiLastSessionRow>()(
  "scope_key",
  "session_key",
  "updated_at",
);

export interface TuiLastSession {
  scopeKey: string;
  sessionKey: string;
  updatedAt: number;
}

/** The session a terminal UI scope (a workspace, a profile) last had open (`tui_last_sessions`). */
export class TuiSessionStore {
  private readonly clock: Clock;
  private readonly upsert: SqlStatement<TuiLastSessionRow>;
  private readonly selectOne: SqlStatement<TuiLastSessionRow>;
  private readonly deleteOne: SqlStatement;

  constructor(db: Database, options: { clock?: Clock } = {}) {
    this.clock = checkOptions(options, ["clock"], "TuiSessionStore").clock ?? Date.now;
    this.upsert = db.prepare(
      `INSERT INTO tui_last_sessions (scope_key, session_key, updated_at) VALUES (?, ?, ?)
       ON CONFLICT DO UPDATE SET session_key = excluded.session_key, updated_at = excluded.updated_at
       RETURNING *`,
    );
    this.selectOne = db.prepare("SELECT * FROM tui_last_sessions WHERE scope_key = ?");
    this.deleteOne = db.prepare("DELETE FROM tui_last_sessions WHERE scope_key = ?");
  }

  set(scopeKey: string, sessionKey: string): TuiLastSession {
    const row = this.upsert.get(
      checkText("TUI scope key", scopeKey),
      checkText("session key", sessionKey),
      this.clock(),
    ) as TuiLastSessionRow;
    return { scopeKey: row.scope_key, sessionKey: row.session_key, updatedAt: row.updated_at };
  }

  get(scopeKey: string): TuiLastSession | undefined {
    const row = this.selectOne.get(checkText("TUI scope key", scopeKey));
    return (
      row && { scopeKey: row.scope_key, sessionKey: row.session_key, updatedAt: row.updated_at }
    );
  }

  delete(scopeKey: string): boolean {
    return this.deleteOne.run(checkText("TUI scope key", scopeKey)).changes > 0;
  }
}
