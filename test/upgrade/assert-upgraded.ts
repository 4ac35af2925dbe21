// What an upgraded agent database must still hold, checked against the schema-6 oracle: through
// the API (export, leaf, dedupe, search, next append) and through a raw connection (rows, checks).
import { expect } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome, type StateHome } from "../../src/home.js";
import {
  ALPHA,
  BETA,
  BULK,
  CJK_WORDS,
  MEMORY_TABLES,
  PROBES,
  type Schema6Fixture,
} from "./rich-agent.js";

export const AGENT = "main";

function assertTranscripts(home: StateHome, fixture: Schema6Fixture): void {
  const agent = home.agent(AGENT);
  for (const [sessionId, lines] of fixture.lines) {
    expect([...agent.transcripts.exportJsonl(sessionId)].join(""), sessionId).toBe(lines);
    expect(agent.branches.leaf(sessionId), sessionId).toBe(fixture.leaves.get(sessionId));
  }
  const counts = new Map(agent.transcripts.listScopes().map((s) => [s.sessionId, s.eventCount]));
  expect(counts).toEqual(fixture.counts);
  expect(agent.branches.leaf(ALPHA)).toBe("a2");
  for (const { sessionId, key, eventId } of fixture.keys) {
    const again = agent.transcripts.append(
      sessionId,
      { type: "message", message: { role: "user", content: [{ type: "text", text: "again" }] } },
      { idempotencyKey: key },
    );
    expect(again.deduplicated, key).toBe(true);
    expect(again.event.id, key).toBe(eventId);
  }
}

function assertSearch(home: StateHome, fixture: Schema6Fixture, path: string): void {
  const agent = home.agent(AGENT);
  for (const word of PROBES) {
    const sessions = new Set(fixture.hits.get(word)?.map((hit) => hit.split(":")[0]));
    sessions.delete(BULK);
    for (const sessionId of sessions) {
      const found = agent.search.search(word, { sessionId, limit: 500 }).map((h) => h.seq);
      const old = fixture.hits.get(word)?.filter((hit) => hit.startsWith(`${sessionId}:`));
      expect(
        found.sort((a, b) => a - b).map((seq) => `${sessionId}:${seq}`),
        word,
      ).toEqual(expect.arrayContaining(old ?? []));
    }
  }
  for (const word of CJK_WORDS) {
    const hits = agent.search.search(word, { sessionId: BETA });
    expect(
      hits.map((h) => h.eventId),
      word,
    ).toContain("b1");
  }
  expect(agent.memory.facts.search("frankfurt").map((f) => f.factId)).toEqual(["fact-region"]);
  // Every word the old index found, across all sessions, through the published view.
  const raw = openRawSqlite(path, { readonly: true });
  try {
    const hitsOf = raw.prepare(
      "SELECT session_id || ':' || seq FROM agentstate_search_v1 WHERE text MATCH ? ORDER BY 1",
    );
    for (const word of PROBES.filter((w) => /^[a-z]+$/.test(w))) {
      expect(hitsOf.pluck().all(`"${word}"`), word).toEqual(fixture.hits.get(word));
    }
  } finally {
    raw.close();
  }
}

/** Rows, integrity and the old tables, read by a connection that is not agentstate's. */
function assertRows(path: string, fixture: Schema6Fixture): void {
  const raw = openRawSqlite(path, { readonly: true });
  try {
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(raw.pragma("foreign_key_check")).toEqual([]);
    const leftovers = raw
      .prepare("SELECT name FROM sqlite_master WHERE name LIKE '%\\_v6' ESCAPE '\\'")
      .all();
    expect(leftovers).toEqual([]);
    for (const table of MEMORY_TABLES) {
      expect(raw.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all(), table).toEqual(
        fixture.memory[table],
      );
    }
    const blobs = raw.prepare("SELECT sha256, data FROM transcript_blobs").all() as {
      data: Uint8Array;
    }[];
    expect(blobs).toHaveLength(1);
    expect(Buffer.from(blobs[0]?.data ?? []).toString("utf8")).toBe(fixture.image);
    expect(raw.prepare("SELECT count(*) FROM transcript_blob_refs").pluck().get()).toBe(2);
  } finally {
    raw.close();
  }
}

/** The next append continues the seq and hangs off the branch leaf, not the last event. */
function assertNextAppend(home: StateHome, fixture: Schema6Fixture): void {
  const next = home.agent(AGENT).transcripts.append(ALPHA, {
    type: "message",
    message: { role: "user", content: [{ type: "text", text: "take the other road" }] },
  });
  expect(next.deduplicated).toBe(false);
  expect(next.seq).toBe((fixture.counts.get(ALPHA) ?? 0) + 1);
  expect(next.event.parentId).toBe("a2");
  expect(home.agent(AGENT).branches.leaf(ALPHA)).toBe(next.event.id);
}

/** Opens the home (finishing any upgrade) and checks everything against the oracle. */
export function assertUpgraded(homePath: string, dbPath: string, fixture: Schema6Fixture): void {
  const home = openStateHome({ home: homePath });
  try {
    assertTranscripts(home, fixture);
    assertSearch(home, fixture, dbPath);
    home.close();
    assertRows(dbPath, fixture);
    const again = openStateHome({ home: homePath });
    try {
      assertNextAppend(again, fixture);
    } finally {
      again.close();
    }
  } finally {
    home.close();
  }
}
