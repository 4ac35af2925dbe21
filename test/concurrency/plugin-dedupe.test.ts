import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { requireBuild } from "../support/built.js";

const MARKER = fileURLToPath(new URL("../fixtures/dedupe-marker.mjs", import.meta.url));
const THREADS = 8;
const KEYS = 1000;

interface MarkerResult {
  owner: string;
  first: string[];
  errors: string[];
}

function inThread(args: {
  path: string;
  owner: string;
  count: number;
  offset: number;
  ready: SharedArrayBuffer;
  parties: number;
}) {
  return new Promise<MarkerResult>((resolve, reject) => {
    const worker = new Worker(MARKER, { workerData: args });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

describe("persistent dedupe under concurrent callers", () => {
  let dir: string;
  beforeAll(() => {
    requireBuild();
    dir = mkdtempSync(join(tmpdir(), "agentstate-dedupe-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`${THREADS} threads x ${KEYS} identical keys: exactly one "new" per key`, async () => {
    const path = join(dir, "state.sqlite");
    openDatabase({ path, role: "global" }).close();
    // The threads wait for each other at a barrier, then race.
    const ready = new SharedArrayBuffer(4);
    const results = await Promise.all(
      Array.from({ length: THREADS }, (_, i) =>
        inThread({
          path,
          owner: `t${i}`,
          count: KEYS,
          offset: Math.floor((i * KEYS) / THREADS),
          ready,
          parties: THREADS,
        }),
      ),
    );
    for (const result of results) expect(result.errors, result.owner).toEqual([]);
    const firsts = results.flatMap((r) => r.first);
    expect(firsts).toHaveLength(KEYS);
    expect(new Set(firsts).size).toBe(KEYS);
    // The threads really raced: the first sightings are spread over more than one of them.
    expect(results.filter((r) => r.first.length > 0).length).toBeGreaterThan(1);
    const db = openDatabase({ path, role: "global" });
    expect(db.prepare("SELECT count(*) AS n FROM plugin_state_entries").get()).toEqual({ n: KEYS });
    db.close();
  });
});
