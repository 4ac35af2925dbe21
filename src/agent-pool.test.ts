import { join } from "node:path";
import { setImmediate as yieldOnce } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { isStateError } from "./db/errors.js";
import { openRawSqlite } from "./db/test-support/raw-sqlite.js";
import { GLOBAL_DB_RELATIVE_PATH, openStateHome, type StateHome } from "./home.js";
import { useTempDirs } from "./test-support/temp-dir.js";

const tempDir = useTempDirs();
const message = (n: number) => ({ type: "message", message: { role: "user", content: `m${n}` } });

function touch(home: StateHome, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    home.transcripts.append({ agentId: `other-${i}`, sessionId: "s" }, message(i));
  }
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

/** V8's own collector, so a test can see what nothing holds any more. */
function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

describe("the pool of open agent databases", () => {
  it("lets go of an evicted agent's connection and stores at once, though its index's idle timer has not run", async () => {
    const home = openStateHome({ home: tempDir(), maxOpenAgents: 1 });
    try {
      // An append leaves its event for the index to take in when the writer goes quiet (1 s).
      home.transcripts.append({ agentId: "a", sessionId: "s" }, message(1));
      const evicted = new WeakRef(home.agent("a").db);
      home.agent("b");
      // A loop that never yields (a gateway's burst, a bench) never lets that timer run.
      await yieldOnce();
      collectGarbage();
      // Not the handle itself: printing a closed one would read its getters.
      expect(evicted.deref() === undefined).toBe(true);
    } finally {
      home.close();
    }
  });

  it("keeps a pinned agent open and working while 200 others come and go under a cap of 8", () => {
    const home = openStateHome({ home: tempDir(), maxOpenAgents: 8 });
    const { agent, release } = home.pinAgent("pinned");
    for (let round = 0; round < 20; round++) {
      touch(home, round * 10, 10);
      agent.transcripts.append("s", message(round));
      expect(home.agentPool.open).toBeLessThanOrEqual(8);
    }
    expect(agent.db.isOpen).toBe(true);
    expect(agent.transcripts.read("s").filter((e) => e.event.type === "message")).toHaveLength(20);
    expect(home.agentPool).toMatchObject({ maxOpenAgents: 8, pinned: 1, openedOverCap: 0 });
    expect(home.agentPool.evicted).toBeGreaterThanOrEqual(200 - 7);
    release();
    home.close();
  });

  it("fails a stale handle with E_CLOSED naming the agent and the way to hold it", () => {
    const home = openStateHome({ home: tempDir(), maxOpenAgents: 4 });
    const stale = home.agent("stale");
    const { kv } = home.agent("stale"); // a store whose statements are already prepared
    kv.set("scope", "key", 1);
    touch(home, 0, 10);
    for (const use of [() => stale.transcripts.read("s"), () => kv.get("scope", "key")]) {
      const error = thrown(use);
      expect(isStateError(error, "E_CLOSED")).toBe(true);
      expect((error as Error).message).toContain('agent "stale" was closed');
      expect((error as Error).message).toContain("withAgent");
    }
    // The agent itself is fine: asking the home again reopens it.
    expect(home.agent("stale").kv.get("scope", "key")).toBe(1);
    home.close();
  });

  it("opens past the cap when every open agent is pinned, counts it, and shrinks back on release", () => {
    const home = openStateHome({ home: tempDir(), maxOpenAgents: 2 });
    const pins = ["a", "b", "c", "d"].map((id) => home.pinAgent(id));
    expect(home.agentPool).toMatchObject({ open: 4, pinned: 4, openedOverCap: 2 });
    for (const pin of pins) expect(pin.agent.db.isOpen).toBe(true);
    for (const pin of pins) pin.release();
    pins[0]?.release(); // a second release is a no-op
    expect(home.agentPool).toMatchObject({ open: 2, pinned: 0 });
    expect(pins.filter((pin) => pin.agent.db.isOpen)).toHaveLength(2);
    home.close();
  });

  it("never closes an agent inside a transaction, pinned or not", () => {
    const home = openStateHome({ home: tempDir(), maxOpenAgents: 1 });
    const busy = home.agent("busy");
    busy.db.tx(() => {
      busy.kv.set("scope", "before", 1);
      touch(home, 0, 3);
      busy.kv.set("scope", "after", 2);
    });
    expect(busy.kv.list("scope").map((entry) => entry.key)).toEqual(["after", "before"]);
    expect(home.agentPool.openedOverCap).toBe(3);
    home.close();
  });

  it("withAgent pins a synchronous body until it returns and an async one until it settles", async () => {
    const home = openStateHome({ home: tempDir(), maxOpenAgents: 1 });
    expect(home.withAgent("sync", (agent) => agent.agentId)).toBe("sync");
    expect(home.agentPool.pinned).toBe(0);
    let resolve: () => void = () => {};
    const gate = new Promise<void>((done) => {
      resolve = () => done();
    });
    const running = home.withAgent("async", async (agent) => {
      await gate;
      return agent.transcripts.append("s", message(1)).event.id;
    });
    touch(home, 0, 5);
    expect(home.agentPool.pinned).toBe(1);
    resolve();
    expect(typeof (await running)).toBe("string");
    expect(home.agentPool).toMatchObject({ pinned: 0, open: 1 });
    await expect(
      home.withAgent("async", async () => Promise.reject(new Error("boom"))),
    ).rejects.toThrow("boom");
    expect(home.agentPool.pinned).toBe(0);
    home.close();
  });

  it("rejects a cap that is not a positive integer, by name", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, "8"]) {
      expect(() =>
        openStateHome({ home: tempDir(), maxOpenAgents: bad as unknown as number }),
      ).toThrow(/maxOpenAgents/);
    }
    const home = openStateHome({ home: tempDir() });
    expect(home.agentPool.maxOpenAgents).toBe(64);
    home.close();
  });

  it("reopens an agent without writing the global database", () => {
    const path = tempDir();
    const home = openStateHome({ home: path, maxOpenAgents: 1 });
    home.transcripts.append({ agentId: "a", sessionId: "s" }, message(1));
    touch(home, 0, 1); // evicts a
    const raw = openRawSqlite(join(path, GLOBAL_DB_RELATIVE_PATH), { readonly: true });
    const lastSeen = raw.prepare("SELECT last_seen_at FROM agent_databases WHERE agent_id = 'a'");
    const before = { version: raw.pragma("data_version", { simple: true }), seen: lastSeen.get() };
    const opened = home.agentPool.opened;
    expect(home.agent("a").transcripts.read("s")).toHaveLength(2);
    expect(home.agentPool.opened).toBe(opened + 1);
    // data_version moves when another connection commits to the file: the home did not.
    expect(raw.pragma("data_version", { simple: true })).toBe(before.version);
    expect(lastSeen.get()).toEqual(before.seen);
    // What gc does for every agent instead: the row then moves.
    const seenBefore = (before.seen as { last_seen_at: number }).last_seen_at;
    while (Date.now() === seenBefore) {}
    home.refreshAgentRecord("a");
    expect((lastSeen.get() as { last_seen_at: number }).last_seen_at).toBeGreaterThan(seenBefore);
    raw.close();
    home.close();
  });
});
