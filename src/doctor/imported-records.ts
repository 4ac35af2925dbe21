import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Database, openDatabase } from "../db/database.js";
import { agentDbRelativePath } from "../home.js";
import { TranscriptStore } from "../stores/agent/transcript-store.js";
import type { ImportedRecords } from "./kinds/types.js";

/**
 * Read-only lookups in a home's agent databases, each opened on first use, so that the plan can
 * tell which records of a partly imported source are already in SQLite without writing anything.
 */
export function openImportedRecords(home: string): ImportedRecords & { close(): void } {
  const opened = new Map<string, { db: Database; transcripts: TranscriptStore } | null>();
  const agent = (agentId: string) => {
    if (!opened.has(agentId)) {
      const path = join(home, agentDbRelativePath(agentId));
      const db = existsSync(path) ? openDatabase({ path, role: "agent", readonly: true }) : null;
      opened.set(agentId, db && { db, transcripts: new TranscriptStore(db, agentId) });
    }
    return opened.get(agentId) ?? null;
  };
  return {
    hasTranscriptEvent: (agentId, sessionId, eventId) =>
      agent(agentId)?.transcripts.get(sessionId, eventId) !== undefined,
    close: () => {
      for (const entry of opened.values()) entry?.db.close();
      opened.clear();
    },
  };
}
