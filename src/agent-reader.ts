import { openDatabase } from "./db/database.js";
import { layoutUpgradePending } from "./db/layout-upgrade.js";
import { latestSchemaVersion } from "./db/schema.js";
import type { HomeDatabaseOptions } from "./home-options.js";
import type { AgentReader } from "./stores/agent/agent-state.js";
import { coldIndexMovePending } from "./stores/agent/cold-index-upgrade.js";
import { TranscriptSearch } from "./stores/agent/transcript-search.js";

/** `readBare`'s answer for a database an older release wrote: only the pool's open upgrades it. */
export const NEEDS_UPGRADE: unique symbol = Symbol("needs upgrade");

/**
 * Runs `fn` over a bare read-only connection to an agent database, closed before this returns.
 * Bare: no pool entry, no checkpointer, none of the first open's checks, nothing written; a
 * search on it matches the events above the index watermark itself (see TranscriptSearch). A
 * whole-home read that went through the pool paid a writable open and an eviction per agent and
 * prepared every transcript statement for one query; one like this keeps one connection at a time.
 */
export function readBare<R>(
  path: string,
  agentId: string,
  options: HomeDatabaseOptions,
  fn: (agent: AgentReader) => R,
): R | typeof NEEDS_UPGRADE {
  const { driver, journalMode } = options;
  const db = openDatabase({
    path,
    role: "agent",
    readonly: true,
    ...(driver ? { driver } : {}),
    ...(journalMode ? { journalMode } : {}),
  });
  try {
    // The stores read today's schema; an older file is brought up to it by a writable open first.
    const behind = layoutUpgradePending(db) || coldIndexMovePending(db);
    if (db.schemaVersion < latestSchemaVersion("agent") || behind) {
      return NEEDS_UPGRADE;
    }
    return fn({ agentId, search: new TranscriptSearch(db, agentId) });
  } finally {
    db.close();
  }
}
