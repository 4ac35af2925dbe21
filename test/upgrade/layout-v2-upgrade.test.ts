import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { batchRowsOf } from "../../src/db/layout-upgrade.js";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { CATCH_UP_BATCH } from "../../src/stores/agent/transcript-index.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { AGENT, assertUpgraded } from "./assert-upgraded.js";
import { buildSchema6Agent } from "./rich-agent.js";

const tempDir = useTempDirs();

/** A home whose agent database was written by the schema-6 release. */
function schema6Home(bulkEvents = 0) {
  const home = tempDir();
  openStateHome({ home }).close();
  const dbPath = join(home, "agents", AGENT, "agent", "agent.sqlite");
  return { home, dbPath, fixture: buildSchema6Agent(dbPath, { bulkEvents }) };
}

describe("a schema-6 agent database opened by this release", () => {
  it("keeps every transcript byte for byte, the branch leaf, keys, blobs, memory and search", () => {
    const { home, dbPath, fixture } = schema6Home();
    const raw = openRawSqlite(dbPath, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(6);
    raw.close();
    assertUpgraded(home, dbPath, fixture);
  });

  it("reports the copy, then indexes a large backlog at open in batches, not at the first search", () => {
    const events = 5 * CATCH_UP_BATCH + 2000;
    const { home, dbPath, fixture } = schema6Home(events);
    const progress: { step: string; done: number; total: number }[] = [];
    const opened = openStateHome({ home, onUpgradeProgress: (p) => progress.push(p) });
    try {
      opened.agent(AGENT);
      const raw = openRawSqlite(dbPath, { readonly: true });
      const state = raw
        .prepare(
          `SELECT (SELECT indexed_through FROM search_index_state) AS mark,
             (SELECT max(id) FROM transcript_events) AS top`,
        )
        .get() as { mark: number; top: number };
      raw.close();
      expect(state.mark).toBe(state.top);
    } finally {
      opened.close();
    }
    const copy = progress.filter((p) => p.step === "transcript events");
    const index = progress.filter((p) => p.step === "search index");
    const written = [...fixture.counts.values()].reduce((a, b) => a + b, 0);
    expect(copy.at(-1)).toEqual({ step: "transcript events", done: written, total: written });
    expect(index.length).toBeGreaterThan(1);
    expect(index.at(-1)?.done).toBe(index.at(-1)?.total);
    assertUpgraded(home, dbPath, fixture);
  });

  it("copies a 30,000-event session with no batch holding the write lock for seconds", () => {
    const { home, dbPath, fixture } = schema6Home(30_000);
    const gaps: number[] = [];
    let last = performance.now();
    const opened = openStateHome({
      home,
      onUpgradeProgress: (p) => {
        if (p.step !== "transcript events") return;
        gaps.push(performance.now() - last);
        last = performance.now();
      },
    });
    try {
      opened.agent(AGENT);
    } finally {
      opened.close();
    }
    // A batch of 5,000 rows is a few tens of ms of work; 2 s leaves room for a loaded machine,
    // while a lookup that scans the session's identities per row takes over 10 s here.
    expect(gaps.length).toBeGreaterThanOrEqual(6);
    expect(Math.max(...gaps.slice(1))).toBeLessThan(2000);
    assertUpgraded(home, dbPath, fixture);
  });

  it("takes the copy batch size from AGENTSTATE_UPGRADE_BATCH_ROWS, refusing a bad one", () => {
    expect(batchRowsOf(undefined)).toBe(5000);
    expect(batchRowsOf("7")).toBe(7);
    for (const bad of ["0", "-3", "1.5", "lots", " 9"]) {
      expect(() => batchRowsOf(bad), bad).toThrow(/AGENTSTATE_UPGRADE_BATCH_ROWS/);
    }
  });
});
