import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { damageMarkerPath } from "../db/damage-marker.js";
import { isStateError } from "../db/errors.js";
import { openRawSqlite } from "../db/test-support/raw-sqlite.js";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { checkHomeDatabases } from "./database-health.js";
import { salvageDatabase } from "./salvage.js";
import { pagesOf, rowidsOnLeafPage } from "./test-support/btree-pages.js";

const tempDir = useTempDirs();
const PAGE = 4096;
const EVENTS = 1500;

/** A home whose agent has one long transcript and some KV rows; returns the agent DB's path. */
function seedHome(): { home: string; dbPath: string; sessionId: string } {
  const home = tempDir();
  const state = openStateHome({ home });
  const { sessionId } = state.sessions.start("main", "agent:main:main");
  for (let i = 0; i < EVENTS; i++) {
    const text = `message ${i} about the basil on the balcony 阳台上的罗勒 ${"lorem ".repeat(i % 20)}`;
    const message = { role: i % 2 ? "assistant" : "user", content: [{ type: "text", text }] };
    state.transcripts.append({ agentId: "main", sessionId }, { type: "message", message });
  }
  const agent = state.agent("main");
  for (let i = 0; i < 50; i++) agent.kv.set("notes", `k${i}`, i);
  // A session moved cold and restored since: its index rows stay in the cold index file.
  const veranda = { type: "message", message: { role: "user", content: "the veranda" } };
  for (let i = 0; i < 10; i++) agent.transcripts.append("restored", veranda);
  agent.cold.move("restored");
  agent.transcripts.append("restored", veranda);
  const dbPath = agent.db.path;
  state.close();
  return { home, dbPath, sessionId };
}

/** Every event row as written, read by a plain connection before any damage. */
function eventsOf(path: string): Map<number, string> {
  const db = openRawSqlite(path, { readonly: true });
  try {
    const rows = db.prepare("SELECT id, event_json FROM transcript_events").all() as Array<{
      id: number;
      event_json: string;
    }>;
    return new Map(rows.map((r) => [r.id, r.event_json]));
  } finally {
    db.close();
  }
}

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return null;
}

interface Case {
  name: string;
  /** Damages the file; returns the event rowids the damage destroyed (by the file format). */
  damage(path: string): Set<number>;
}

const CASES: Case[] = [
  {
    name: "a page overwritten with garbage",
    damage(path) {
      const { leaves } = pagesOf(path, "transcript_events");
      const page = leaves[Math.floor(leaves.length / 2)] as number;
      const file = readFileSync(path);
      const lost = new Set(rowidsOnLeafPage(file, page));
      randomBytes(PAGE).copy(file, (page - 1) * PAGE);
      writeFileSync(path, file);
      return lost;
    },
  },
  {
    name: "a truncated file",
    damage(path) {
      const { leaves, interior } = pagesOf(path, "transcript_events");
      const keep = leaves[Math.floor((leaves.length * 2) / 3)] as number;
      expect(Math.max(...interior)).toBeLessThan(keep); // the tree itself stays reachable
      const file = readFileSync(path);
      const lost = new Set(
        leaves.filter((p) => p > keep).flatMap((p) => rowidsOnLeafPage(file, p)),
      );
      truncateSync(path, keep * PAGE);
      return lost;
    },
  },
  {
    name: "a bad header",
    damage(path) {
      const file = readFileSync(path);
      randomBytes(100).copy(file, 0);
      writeFileSync(path, file);
      return new Set();
    },
  },
];

describe("a damaged agent database", () => {
  for (const c of CASES) {
    it(`${c.name}: quarantined, then salvaged with every row of its undamaged pages, the damaged file kept`, () => {
      const { home, dbPath, sessionId } = seedHome();
      const written = eventsOf(dbPath);
      expect(written.size).toBeGreaterThanOrEqual(EVENTS);
      const lost = c.damage(dbPath);
      const damagedBytes = readFileSync(dbPath);

      const health = checkHomeDatabases(home);
      expect(health.find((h) => h.path === dbPath)?.status).toBe("damaged");
      expect(existsSync(damageMarkerPath(dbPath))).toBe(true);
      for (const readonly of [false, true]) {
        const state = openStateHome({ home, readonly });
        const error = errorOf(() => state.agent("main", { create: false }));
        state.close();
        expect(isStateError(error, "E_DAMAGED")).toBe(true);
        expect((error as Error).message).toContain("agentstate doctor --fix");
      }

      const report = salvageDatabase(dbPath, "agent");
      expect(readFileSync(report.keptAt).equals(damagedBytes)).toBe(true);
      expect(report.check).toEqual(["ok"]);
      expect(existsSync(damageMarkerPath(dbPath))).toBe(false);

      const salvaged = eventsOf(dbPath);
      for (const [id, json] of written) {
        if (!lost.has(id)) expect(salvaged.get(id), `event row ${id}`).toBe(json);
      }
      for (const [id, json] of salvaged) expect(written.get(id)).toBe(json);
      const events = report.tables.find((t) => t.table === "transcript_events");
      expect(events?.recovered).toBe(salvaged.size);
      expect(salvaged.size).toBeGreaterThanOrEqual(written.size - lost.size);
      if (events?.lost !== "unknown") expect(events?.lost).toBe(written.size - salvaged.size);

      const state = openStateHome({ home });
      const agent = state.agent("main", { create: false });
      expect(agent.kv.get("notes", "k49")).toBe(49);
      const hits = state.transcripts.search("balcony", { agentId: "main", sessionId, limit: 500 });
      expect(hits.length).toBe(Math.min(500, salvaged.size));
      // The rebuilt index cuts CJK text as the store does when it appends.
      const cjk = state.transcripts.search("阳台", { agentId: "main", sessionId, limit: 500 });
      expect(cjk.length).toBe(hits.length);
      // Re-indexed whole, a session restored from the cold is found once, not also by its old
      // rows in the cold index.
      const again = state.transcripts.search("veranda", { agentId: "main", limit: 500 });
      const keys = again.map((h) => `${h.sessionId}/${h.seq}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(keys.length).toBe([...salvaged.values()].filter((j) => j.includes("veranda")).length);
      // The usage rollups count the salvaged events, not those the damaged file counted.
      const rolled = agent.usage.byDay().reduce((sum, day) => sum + day.events, 0);
      expect(rolled).toBe(salvaged.size);
      state.close();
      const kept = readdirSync(dirname(dbPath)).filter((f) => f.includes(".damaged-"));
      expect(kept.length).toBeGreaterThanOrEqual(1);
    });
  }

  it("the global database with a bad header: its rows come back, the registry too", () => {
    const home = tempDir();
    const state = openStateHome({ home });
    for (let i = 0; i < 300; i++) state.kv.set("prefs", `k${i}`, { i });
    state.agent("main").kv.set("s", "k", 1);
    const path = state.db.path;
    state.close();
    const file = readFileSync(path);
    randomBytes(100).copy(file, 0);
    writeFileSync(path, file);

    expect(checkHomeDatabases(home).find((h) => h.path === path)?.status).toBe("damaged");
    expect(
      isStateError(
        errorOf(() => openStateHome({ home, readonly: true })),
        "E_DAMAGED",
      ),
    ).toBe(true);
    const report = salvageDatabase(path, "global");
    expect(report.tables.find((t) => t.table === "kv")?.recovered).toBe(300);
    expect(readFileSync(report.keptAt).equals(file)).toBe(true);
    const reopened = openStateHome({ home, create: false });
    expect(reopened.kv.get("prefs", "k299")).toEqual({ i: 299 });
    expect(reopened.agent("main", { create: false }).kv.get("s", "k")).toBe(1);
    reopened.close();
  });

  it("a healthy home is reported ok and left without markers", () => {
    const { home, dbPath } = seedHome();
    const health = checkHomeDatabases(home);
    expect(health.map((h) => h.status)).toEqual(["ok", "ok"]);
    expect(existsSync(damageMarkerPath(dbPath))).toBe(false);
    // The check leaves no -wal or -shm behind (nothing else had the files open).
    expect(readdirSync(dirname(dbPath)).sort()).toEqual(["agent.sqlite", "cold"]);
    expect(existsSync(join(home, "state", "state.sqlite.damaged"))).toBe(false);
  });
});
