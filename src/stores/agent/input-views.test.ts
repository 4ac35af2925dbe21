import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import type { ProcessOwner } from "../../db/process-owner.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { InputStore } from "./input-store.js";
import { TranscriptBranches } from "./transcript-branches.js";
import { TranscriptStore } from "./transcript-store.js";

const tempDir = useTempDirs();
const LEASE = 1000;
/** This pid with a start time it never had: `processOwnerAlive` judges it dead, as a killed owner. */
const GHOST: ProcessOwner = { pid: process.pid, started: -1 };

function rig() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const now = { t: 1_000_000 };
  const transcripts = new TranscriptStore(db, "main");
  const branches = new TranscriptBranches(db, transcripts);
  const store = (process?: ProcessOwner) =>
    new InputStore(db, transcripts, branches, {
      clock: () => now.t,
      ...(process ? { process } : {}),
    });
  const rows = () =>
    db
      .prepare<{ input_id: string; state: string; lease_expires_at: number | null }>(
        "SELECT input_id, state, lease_expires_at FROM inputs ORDER BY arrival_seq",
      )
      .all();
  return { now, store, rows };
}

describe("InputStore.listAsRecovered", () => {
  it("reads a lapsed claim of a dead owner as interrupted, in arrival order, and writes nothing", () => {
    const { now, store, rows } = rig();
    const inputs = store();
    const ghost = store(GHOST);
    const accept = (key: string, id: string) =>
      inputs.accept(key, { idempotencyKey: id, payload: id, inputId: id });
    for (const id of ["old", "orphan", "slow", "fresh", "waiting"]) accept("k", id);
    accept("k2", "other");
    ghost.claim("k", "gw", { leaseMs: LEASE }); // old
    inputs.recover("k"); // nothing lapsed yet
    now.t += LEASE;
    inputs.recover("k"); // old: interrupted, recorded
    ghost.claim("k", "gw", { leaseMs: LEASE }); // orphan: its owner is dead
    inputs.claim("k", "gw", { leaseMs: LEASE }); // slow: its owner (this process) runs
    now.t += LEASE;
    ghost.claim("k", "gw", { leaseMs: LEASE }); // fresh: lease still running
    ghost.claim("k2", "gw", { leaseMs: 1 }); // other: orphaned on another key
    now.t += 1;
    const before = rows();

    const ids = (list: { inputId: string }[]) => list.map((i) => i.inputId);
    const interrupted = inputs.listAsRecovered({ state: "interrupted" });
    expect(ids(interrupted)).toEqual(["old", "orphan", "other"]);
    expect(interrupted.map((i) => i.storedState)).toEqual(["interrupted", "claimed", "claimed"]);
    expect(ids(inputs.listAsRecovered({ state: "interrupted", sessionKey: "k" }))).toEqual([
      "old",
      "orphan",
    ]);
    expect(ids(inputs.listAsRecovered({ state: "interrupted", limit: 2 }))).toEqual([
      "old",
      "orphan",
    ]);
    // A page of one claimed input steps over the orphan before it.
    expect(ids(inputs.listAsRecovered({ state: "claimed", limit: 1 }))).toEqual(["slow"]);
    expect(ids(inputs.listAsRecovered({ state: "claimed" }))).toEqual(["slow", "fresh"]);
    expect(inputs.listAsRecovered({ sessionKey: "k" }).map((i) => i.state)).toEqual([
      "interrupted",
      "interrupted",
      "claimed",
      "claimed",
      "accepted",
    ]);
    expect(rows()).toEqual(before);
    expect(before.find((r) => r.input_id === "orphan")?.state).toBe("claimed");
    // What recover then records agrees with what was shown.
    inputs.recover("k");
    inputs.recover("k2");
    expect(ids(inputs.list({ state: "interrupted" }))).toEqual(ids(interrupted));
  });

  it("refuses an unknown state as list does", () => {
    const { store } = rig();
    expect(() => store().listAsRecovered({ state: "lost" as "claimed" })).toThrow(
      /unknown input state lost/,
    );
  });
});
