// With the built package a move hands its search rows to the cold index thread, which writes them
// while the move encodes the archive. The rows it writes must be the ones a move writes on its own
// thread (the TypeScript sources here have no compiled thread: their moves write inline, the oracle).
import { spawnSync } from "node:child_process";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";

const CHILD = fileURLToPath(new URL("./thread-child.mjs", import.meta.url));
const COLD_INDEX = join("agents", "main", "agent", "cold", "index.sqlite");
const WORDS = ["otter", "heron", "maple", "cobalt", "saffron", "東京", "über", "naïve"];
const tempDir = useTempDirs();

/** Sessions of 700, 300 and 40 events: the last is too small to be worth the thread. */
function buildHome(dir: string): void {
  const home = openStateHome({ home: dir });
  const agent = home.agent("main");
  for (const [s, n] of [700, 300, 40].entries()) {
    agent.transcripts.appendMany(
      `s${s}`,
      Array.from({ length: n }, (_, i) => ({
        type: "message",
        message: {
          role: i % 2 === 0 ? "user" : "assistant",
          content: `${WORDS[(i * 7 + s) % WORDS.length]} ${WORDS[(i * 3) % WORDS.length]} step ${i} of s${s}`,
        },
      })),
    );
  }
  home.close();
}

function runChild(mode: string, home: string): Record<string, unknown> {
  const child = spawnSync(process.execPath, [CHILD, mode, home], { encoding: "utf8" });
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout) as Record<string, unknown>;
}

function indexRows(home: string): unknown[] {
  const raw = openRawSqlite(join(home, COLD_INDEX), { readonly: true });
  try {
    return raw.prepare("SELECT rowid, text FROM cold_fts ORDER BY rowid").all();
  } finally {
    raw.close();
  }
}

function searches(home: string): unknown[] {
  const state = openStateHome({ home, readonly: true });
  try {
    const search = state.agent("main").search;
    return [...WORDS, "step 12", "s1"].map((query) =>
      search.search(query, { limit: 500 }).map((h) => [h.sessionId, h.eventId, h.score, h.snippet]),
    );
  } finally {
    state.close();
  }
}

describe("the cold index thread", () => {
  it("writes the rows a move writes on its own thread, and search finds the same hits", () => {
    requireBuild();
    const inline = tempDir();
    buildHome(inline);
    const threaded = tempDir();
    cpSync(inline, threaded, { recursive: true });
    const before = searches(inline);
    const home = openStateHome({ home: inline });
    for (const id of ["s0", "s1", "s2"]) home.agent("main").cold.move(id);
    home.close();
    // The two sessions of 300 rows or more went to the thread; the small one did not.
    expect(runChild("move", threaded)).toEqual({ jobs: 2 });
    expect(indexRows(threaded)).toEqual(indexRows(inline));
    expect(indexRows(threaded)).toHaveLength(1040);
    expect(searches(threaded)).toEqual(searches(inline));
    // The same hits as before the moves (scores aside: the cold index has figures of its own).
    const hits = (all: unknown[]) => all.map((q) => (q as unknown[][]).map((h) => h[1]).sort());
    expect(hits(searches(threaded))).toEqual(hits(before));
  });

  it("answers a failed job with its error, and serves the next", () => {
    requireBuild();
    const dir = tempDir();
    buildHome(dir);
    runChild("move", dir);
    expect(runChild("missing", dir)).toEqual({
      missing: "StateError E_NOT_FOUND",
      real: "ok",
      jobs: 2,
    });
  });
});
