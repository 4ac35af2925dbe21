// Homes whose agent has cold sessions, the ways their cold index file gets damaged, and the
// searches that must answer the same before the damage and after a rebuild.
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openRawSqlite } from "../../db/test-support/raw-sqlite.js";
import { openStateHome } from "../../home.js";
import type { SearchHit } from "../../stores/agent/transcript-search.js";
import type { NewTranscriptEvent } from "../../stores/agent/transcript-store.js";
import type { ColdIndexProblemCode } from "../cold-index-health.js";

export const AGENT = "main";
export const AGENT_DB = join("agents", AGENT, "agent", "agent.sqlite");
export const COLD_INDEX = join("agents", AGENT, "agent", "cold", "index.sqlite");

/** Words every query below is made of; each session's events use them all. */
export const QUERIES = [
  "walrus",
  "deploy*",
  "grep",
  "雪の日",
  "summary",
  "kelp forest",
  "s2x7",
  "picture",
];

export const COLD_INDEX_DAMAGES = [
  "deleted",
  "truncated",
  "garbage",
  "garbage-pages",
  "session-rows-deleted",
] as const;
export type ColdIndexDamage = (typeof COLD_INDEX_DAMAGES)[number];

/** The problem code doctor gives each damage. */
export const CODE_OF_DAMAGE: Record<ColdIndexDamage, ColdIndexProblemCode> = {
  deleted: "cold-index-missing",
  truncated: "cold-index-damaged",
  garbage: "cold-index-damaged",
  "garbage-pages": "cold-index-damaged",
  "session-rows-deleted": "cold-index-uncovered",
};

/** A session's events: text, tool calls, CJK, summaries, images, and events with no text. */
function eventsOf(sessionId: string, n: number): NewTranscriptEvent[] {
  const message = (role: string, content: unknown) => ({
    type: "message",
    message: { role, content },
  });
  return Array.from({ length: n }, (_, i) => {
    const word = `${sessionId}x${i}`;
    const filler = "the kelp forest sways ".repeat(1 + (i % 7));
    if (i % 25 === 4) {
      const image = {
        type: "image",
        data: randomBytes(3000).toString("base64"),
        mimeType: "image/png",
      };
      return message("user", [image, { type: "text", text: `walrus picture ${word}` }]);
    }
    if (i % 5 === 0) return message("user", `walrus ${word} 雪の日 ${filler}`);
    if (i % 5 === 1) {
      const call = {
        type: "toolCall",
        id: `c${i}`,
        name: "bash",
        arguments: { command: `grep -rn ${word}` },
      };
      return message("assistant", [{ type: "text", text: `deploying ${word}` }, call]);
    }
    if (i % 5 === 2) return { type: "compaction", summary: `summary of ${word} ${filler}` };
    if (i % 5 === 3) return { type: "model_change", provider: "p", modelId: `m${i}` };
    return message("user", `walrus ${filler} ${word}`);
  });
}

/**
 * A home whose agent "main" has four cold sessions (s0-s3), one of them (s1) restored by an append
 * since (its claimed rows stay in the cold index), a hot session (h0), and a cold session deleted
 * and purged, so the cold index holds exactly what the claims cover.
 */
export function buildColdHome(home: string, eventsPerSession = 40): void {
  const state = openStateHome({ home });
  try {
    const agent = state.agent(AGENT);
    for (const id of ["s0", "s1", "s2", "s3", "gone", "h0"]) {
      agent.transcripts.appendMany(id, eventsOf(id, eventsPerSession));
    }
    for (const id of ["s0", "s1", "s2", "s3", "gone"]) agent.cold.move(id);
    agent.transcripts.append("s1", {
      type: "message",
      message: { role: "user", content: "walrus after the cold" },
    });
    agent.lifecycle.delete("gone");
    agent.cold.purgeIndex();
  } finally {
    state.close();
  }
}

/** Every query's hits in the agent, in order, whole (scores and snippets included). */
export function searchAll(home: string): Record<string, SearchHit[]> {
  const state = openStateHome({ home, readonly: true });
  try {
    const search = state.agent(AGENT).search;
    return Object.fromEntries(QUERIES.map((q) => [q, search.search(q, { limit: 500 })]));
  } finally {
    state.close();
  }
}

/** Damages the home's cold index file one way. */
export function damageColdIndex(home: string, damage: ColdIndexDamage): void {
  const path = join(home, COLD_INDEX);
  const bytes = readFileSync(path);
  if (damage === "deleted") rmSync(path);
  else if (damage === "truncated") truncateSync(path, Math.floor(bytes.length / 2));
  else if (damage === "garbage") writeFileSync(path, randomBytes(bytes.length));
  else if (damage === "garbage-pages") {
    const from = Math.floor(bytes.length / 4);
    randomBytes(Math.floor(bytes.length / 2)).copy(bytes, from);
    writeFileSync(path, bytes);
  } else deleteSessionRows(home, "s2");
}

function deleteSessionRows(home: string, sessionId: string): void {
  const agent = openRawSqlite(join(home, AGENT_DB), { readonly: true });
  const sessionNo = agent
    .prepare("SELECT session_no FROM sessions WHERE session_id = ?")
    .pluck()
    .get(sessionId) as number;
  agent.close();
  const index = openRawSqlite(join(home, COLD_INDEX));
  try {
    const base = sessionNo * 2 ** 32;
    index.prepare("DELETE FROM cold_fts WHERE rowid BETWEEN ? AND ?").run(base, base + 2 ** 32 - 1);
  } finally {
    index.close();
  }
}

/** The agent database's claims on its cold index, as rows. */
export function claimsOf(home: string): unknown[] {
  const agent = openRawSqlite(join(home, AGENT_DB), { readonly: true });
  try {
    return agent.prepare("SELECT * FROM cold_index_claims ORDER BY session_no").all();
  } finally {
    agent.close();
  }
}

/** `integrity_check` of the home's cold index file (FTS5's own check included). */
export function coldIndexIntegrity(home: string): unknown {
  const index = openRawSqlite(join(home, COLD_INDEX), { readonly: true, fileMustExist: true });
  try {
    return index.pragma("integrity_check", { simple: true });
  } finally {
    index.close();
  }
}
