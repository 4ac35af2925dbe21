import type { LegacySource } from "../discover.js";
import { readSessionIndex } from "../sources/session-index-source.js";
import {
  type ImportContext,
  type ImportOutcome,
  type KindHandler,
  problem,
  type SourceScan,
} from "./types.js";

function agentIdOf(source: LegacySource): string {
  return source.agentId ?? "main";
}

function scan(absPath: string, source: LegacySource): SourceScan {
  const read = readSessionIndex(absPath, agentIdOf(source));
  const notes: string[] = [];
  if (read.format === "empty") notes.push("empty index (no sessions)");
  const merged = read.recordCount - read.problems.length - read.entries.length;
  if (merged > 0) notes.push(`${merged} legacy keys merge into their canonical agent:… keys`);
  return {
    records: read.entries.length,
    problems: read.problems.map((p) => problem(null, p.reason, p.key)),
    notes,
  };
}

/**
 * Upserts each entry under its canonical key unless the database already holds a newer one, and
 * attaches the entry's session to the key (creating an empty session when its transcript is
 * missing, so the index entry still resolves).
 */
function importIndex(context: ImportContext): ImportOutcome {
  const agent = context.home.agent(agentIdOf(context.source));
  const read = readSessionIndex(context.source.absPath, agentIdOf(context.source));
  const outcome: ImportOutcome = {
    records: 0,
    alreadyPresent: 0,
    problems: read.problems.map((p) => problem(null, p.reason, p.key)),
  };
  agent.db.tx(() => {
    for (const entry of read.entries) {
      const existing = agent.sessions.get(entry.key);
      if (existing && existing.updatedAt > (entry.updatedAt ?? 0)) {
        outcome.alreadyPresent++;
      } else {
        agent.sessions.upsert(entry.key, entry.entry);
      }
      if (entry.sessionId)
        agent.lifecycle.attachKey(
          entry.sessionId,
          entry.key,
          entry.updatedAt ?? context.source.mtimeMs,
        );
      outcome.records++;
    }
  });
  return outcome;
}

export const sessionIndexKind: KindHandler = { scan, import: importIndex };
