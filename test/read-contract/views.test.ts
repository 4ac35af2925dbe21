import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { openRawSqlite, type RawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { corpusTranscripts } from "../../src/test-support/corpus.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { AGENT } from "../upgrade/assert-upgraded.js";
import { ALPHA } from "../upgrade/rich-agent.js";
import { agentDb, freshHome, upgradedHome } from "./homes.js";

interface PinnedColumn {
  name: string;
  declared: string;
  storage: string[];
}

/** The v1 contract as committed: a change here is a change of the published interface. */
const PINNED = JSON.parse(
  readFileSync(new URL("./views-v1.json", import.meta.url), "utf8"),
) as Record<string, PinnedColumn[]>;
const VIEWS = Object.keys(PINNED);
const ORDER: Record<string, string> = {
  agentstate_sessions_v1: "session_id",
  agentstate_events_v1: "session_id, seq",
  agentstate_blobs_v1: "sha256",
  agentstate_unindexed_events_v1: "session_id, seq",
};
const WORDS = ["kubernetes", "rollback", "persona", "quarterly", '"支持"', '"通道"'];
const tempDir = useTempDirs();

function withRaw<T>(path: string, read: (raw: RawSqlite) => T): T {
  const raw = openRawSqlite(path, { readonly: true });
  try {
    return read(raw);
  } finally {
    raw.close();
  }
}

/** Every row a reader gets from the views, by plain SQL. */
function viewRows(raw: RawSqlite): Record<string, unknown[]> {
  const rows: Record<string, unknown[]> = {};
  for (const [view, order] of Object.entries(ORDER)) {
    rows[view] = raw.prepare(`SELECT * FROM ${view} ORDER BY ${order}`).all();
  }
  const search = raw.prepare(
    "SELECT * FROM agentstate_search_v1 WHERE text MATCH ? ORDER BY score, session_id, seq",
  );
  for (const word of WORDS) rows[`search ${word}`] = search.all(word);
  return rows;
}

function appendOneMore(home: string): void {
  const state = openStateHome({ home });
  try {
    state.agent(AGENT).transcripts.append(
      ALPHA,
      {
        type: "message",
        id: "late1",
        parentId: "a2",
        timestamp: "2026-01-01T00:00:00.000Z",
        message: { role: "user", content: [{ type: "text", text: "one more, not indexed yet" }] },
      },
      { verbatim: true },
    );
  } finally {
    state.close();
  }
}

describe("the published read views (v1)", () => {
  it("keep their pinned column names, declared types and storage classes", () => {
    const home = tempDir();
    upgradedHome(home);
    appendOneMore(home);
    withRaw(agentDb(home), (raw) => {
      for (const view of VIEWS) {
        const columns = raw
          .prepare("SELECT name, type AS declared FROM pragma_table_info(?) ORDER BY cid")
          .all(view);
        expect(columns, view).toEqual(
          PINNED[view]?.map(({ name, declared }) => ({ name, declared })),
        );
        const where = view === "agentstate_search_v1" ? "WHERE text MATCH 'kubernetes'" : "";
        for (const { name, storage } of PINNED[view] ?? []) {
          const seen = raw
            .prepare(`SELECT DISTINCT typeof("${name}") FROM ${view} ${where}`)
            .pluck()
            .all() as string[];
          expect(seen.length, `${view}.${name} has rows`).toBeGreaterThan(0);
          for (const type of seen) expect(storage, `${view}.${name}`).toContain(type);
        }
      }
    });
  });

  // Its sizes count the real corpus session: a clone without ../shared (never CI) skips it.
  it.skipIf(corpusTranscripts().length === 0)(
    "give the same rows on an upgraded database as on a fresh one with the same data",
    () => {
      const upgraded = tempDir();
      const fresh = tempDir();
      freshHome(fresh, upgradedHome(upgraded));
      const before = withRaw(agentDb(upgraded), viewRows);
      expect(before.agentstate_events_v1?.length).toBeGreaterThan(30);
      expect(before["search kubernetes"]?.length).toBeGreaterThan(0);
      expect(before['search "通道"']?.length).toBeGreaterThan(0);
      expect(before.agentstate_unindexed_events_v1).toEqual([]);
      expect(withRaw(agentDb(fresh), viewRows)).toEqual(before);
      appendOneMore(upgraded);
      appendOneMore(fresh);
      const after = withRaw(agentDb(upgraded), viewRows);
      expect(after.agentstate_unindexed_events_v1).toHaveLength(1);
      expect(withRaw(agentDb(fresh), viewRows)).toEqual(after);
    },
  );

  it("refuse writes", () => {
    const home = tempDir();
    upgradedHome(home);
    const raw = openRawSqlite(agentDb(home));
    try {
      for (const view of VIEWS) {
        const columns = PINNED[view]?.map((c) => c.name) ?? [];
        const insert = `INSERT INTO ${view} (${columns.join(", ")}) VALUES (${columns.map(() => "NULL").join(", ")})`;
        expect(() => raw.exec(insert), view).toThrow(/cannot modify .* because it is a view/);
        expect(() => raw.exec(`DELETE FROM ${view}`), view).toThrow(/because it is a view/);
      }
    } finally {
      raw.close();
    }
  });
});
