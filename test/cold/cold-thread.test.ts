// With the built package a move hands its search rows to the cold storage thread, which writes
// them while the move encodes the archive, and a restore has it inflate the archive's members
// while it inserts rows. What it writes must be what a move writes on its own thread (the
// TypeScript sources here have no compiled thread: their moves write inline, the oracle), and a
// restore must bring back the rows as they were.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { ArchiveReader } from "../../src/transcript/cold-archive.js";
import { requireBuild } from "../support/built.js";

const CHILD = fileURLToPath(new URL("./thread-child.mjs", import.meta.url));
const COLD_INDEX = join("agents", "main", "agent", "cold", "index.sqlite");
const AGENT_DB = join("agents", "main", "agent", "agent.sqlite");
const WORDS = ["otter", "heron", "maple", "cobalt", "saffron", "東京", "über", "naïve"];
const tempDir = useTempDirs();

/** A few KB of text of its own per event: a session of 700 such events spans several archive members. */
function filler(s: number, i: number): string {
  return Array.from({ length: 40 }, (_, k) =>
    createHash("sha256").update(`${s}/${i}/${k}`).digest("hex").slice(0, 60),
  ).join(" ");
}

/**
 * Sessions of 700 events (about 2.5 MB), 300 and 40: the last is too small to be worth the
 * thread.
 */
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
          content: `${WORDS[(i * 7 + s) % WORDS.length]} ${WORDS[(i * 3) % WORDS.length]} step ${i} of s${s}${s === 0 ? ` ${filler(s, i)}` : ""}`,
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

/** Every event row of agent "main", by session and seq, as SQL reads them. */
function eventRows(home: string): unknown[] {
  const raw = openRawSqlite(join(home, AGENT_DB), { readonly: true });
  try {
    return raw
      .prepare(
        `SELECT s.session_id, e.seq, e.event_id, e.parent_id, e.created_at, e.event_json
         FROM transcript_events e JOIN sessions s USING (session_no) ORDER BY 1, 2`,
      )
      .all();
  } finally {
    raw.close();
  }
}

/** How many members each cold session's archive has, read from the archives themselves. */
function archiveMembers(home: string): number[] {
  const raw = openRawSqlite(join(home, AGENT_DB), { readonly: true });
  try {
    const paths = raw.prepare("SELECT archive_path FROM cold_sessions").pluck().all() as string[];
    return paths.map((path) => {
      const bytes = readFileSync(join(home, path));
      const reader = new ArchiveReader((o, l) => bytes.subarray(o, o + l), bytes.length);
      return reader.index.members.length;
    });
  } finally {
    raw.close();
  }
}

describe("the cold storage thread", () => {
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

  it("inflates a restore's archive members ahead of its inserts, and the rows come back as they were", () => {
    requireBuild();
    const dir = tempDir();
    buildHome(dir);
    const before = eventRows(dir);
    runChild("move", dir);
    const members = archiveMembers(dir);
    // Only archives of two members or more are worth inflating ahead.
    const ahead = members.filter((n) => n >= 2).reduce((sum, n) => sum + n, 0);
    expect(ahead).toBeGreaterThanOrEqual(2);
    expect(runChild("restore", dir)).toEqual({ jobs: ahead });
    expect(eventRows(dir)).toEqual(before);
    expect(archiveMembers(dir)).toEqual([]);
  });

  it("answers a failed job with its error, and serves the next", () => {
    requireBuild();
    const dir = tempDir();
    buildHome(dir);
    runChild("move", dir);
    expect(runChild("failures", dir)).toEqual({
      missing: "StateError E_NOT_FOUND",
      real: "ok",
      inflate: "StateError E_CORRUPT",
      jobs: 3,
    });
  });
});
