import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../db/database.js";
import { isStateError, type StateErrorCode } from "../../db/errors.js";
import type { ProcessOwner } from "../../db/process-owner.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { InputStore } from "./input-store.js";
import { TranscriptBranches } from "./transcript-branches.js";
import { TranscriptStore } from "./transcript-store.js";

const tempDir = useTempDirs();
const LEASE = 1000;
/** This pid with a start time it never had: judged dead, as a killed owner. */
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
  return { db, now, transcripts, store };
}

type Row = Record<string, string | number | null>;

function row(db: Database, idempotencyKey: string): Row | undefined {
  return db
    .prepare<Row>(
      `SELECT state, lease_owner, lease_owner_pid, lease_expires_at, attempts, outcome_json
       FROM inputs WHERE idempotency_key = ?`,
    )
    .get(idempotencyKey);
}

function count(db: Database, table: string): number {
  return (db.prepare<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
}

function codeOf(fn: () => unknown): StateErrorCode | "none" {
  try {
    fn();
    return "none";
  } catch (error) {
    if (isStateError(error)) return error.code;
    throw error;
  }
}

const user = (text: string) => ({
  type: "message",
  message: { role: "user", content: [{ type: "text", text }] },
});

describe("InputStore.accept with claim and events", () => {
  it("records, leases and appends in one transaction; a redelivery does none of it again", () => {
    const { db, store, transcripts } = rig();
    const inputs = store();
    const turn = { claim: { owner: "gw", leaseMs: LEASE }, sessionId: "s1", events: [user("hi")] };
    const first = inputs.accept("k", { idempotencyKey: "m1", payload: 1 }, turn);
    expect(first.duplicate).toBe(false);
    expect(row(db, "m1")).toEqual({
      state: "claimed",
      lease_owner: "gw",
      lease_owner_pid: process.pid,
      lease_expires_at: 1_000_000 + LEASE,
      attempts: 1,
      outcome_json: null,
    });
    const stored = transcripts.read("s1").filter((e) => e.event.type === "message");
    expect(first.eventIds).toEqual(stored.map((e) => e.event.id));
    expect(stored).toHaveLength(1);
    const events = count(db, "transcript_events");
    const retry = inputs.accept("k", { idempotencyKey: "m1", payload: 1 }, turn);
    expect(retry).toEqual({ input: first.input, duplicate: true, eventIds: [] });
    expect(count(db, "transcript_events")).toBe(events);
    expect(row(db, "m1")?.attempts).toBe(1);
    // The turn ends as any claimed input's does.
    expect(inputs.complete(first.input.inputId, "gw", { sessionId: "s1" }).state).toBe("completed");
  });

  it("writes no input when the append fails, and no event when the input id is taken", () => {
    const { db, store } = rig();
    const inputs = store();
    const orphan = { ...user("late"), parentId: "missing" };
    const failing = { sessionId: "s1", events: [user("ok"), orphan] };
    expect(codeOf(() => inputs.accept("k", { idempotencyKey: "m1", payload: 1 }, failing))).toBe(
      "E_NOT_FOUND",
    );
    expect(count(db, "inputs")).toBe(0);
    expect(count(db, "transcript_events")).toBe(0);
    inputs.accept("k", { idempotencyKey: "m0", payload: 1, inputId: "mine" });
    const taken = { idempotencyKey: "m2", payload: 1, inputId: "mine" };
    expect(codeOf(() => inputs.accept("k", taken, { sessionId: "s1", events: [user("x")] }))).toBe(
      "E_CONFLICT",
    );
    expect(count(db, "transcript_events")).toBe(0);
    expect(
      codeOf(() => inputs.accept("k", { idempotencyKey: "m3", payload: 1 }, { events: [] })),
    ).toBe("none");
    expect(
      codeOf(() =>
        inputs.accept("k", { idempotencyKey: "m4", payload: 1 }, { events: [user("x")] }),
      ),
    ).toBe("E_INVALID_ARGUMENT");
    const misspelt = { claim: { owner: "gw", leaseMs: LEASE, limit: 2 } } as never;
    expect(() => inputs.accept("k", { idempotencyKey: "m5", payload: 1 }, misspelt)).toThrow(
      TypeError,
    );
    expect(count(db, "inputs")).toBe(2);
  });

  it("an input claimed by accept whose owner died is interrupted by recover, however many came after", () => {
    const { db, now, store } = rig();
    const ghost = store(GHOST);
    const alive = store();
    const lost = ghost.accept(
      "k",
      { idempotencyKey: "lost", payload: 1 },
      { claim: { owner: "gw", leaseMs: LEASE } },
    ).input;
    // Later turns of this key and another, run to completion by a live gateway.
    for (let i = 0; i < 40; i++) {
      const key = i % 2 === 0 ? "k" : "other";
      const claim = { owner: "gw", leaseMs: LEASE };
      const { input } = alive.accept(key, { idempotencyKey: `m${i}`, payload: i }, { claim });
      alive.complete(input.inputId, "gw");
      if (i % 10 === 0) alive.accept(key, { idempotencyKey: `w${i}`, payload: i });
    }
    expect(alive.list({ state: "claimed", sessionKey: "k" }).map((i) => i.inputId)).toEqual([
      lost.inputId,
    ]);
    expect(alive.recover("k").interrupted.map((i) => i.inputId)).toEqual([]);
    now.t += LEASE;
    expect(alive.recover("k").interrupted.map((i) => i.inputId)).toEqual([lost.inputId]);
    expect(row(db, "lost")).toMatchObject({ state: "interrupted", lease_owner: "gw" });
    expect(alive.list({ state: "claimed", sessionKey: "k" })).toEqual([]);
    expect(alive.requeue(lost.inputId).state).toBe("accepted");
  });
});

describe("input ids", () => {
  it("are derived from the row unless chosen; a chosen id may not look derived", () => {
    const { store } = rig();
    const inputs = store();
    const a = inputs.accept("k", { idempotencyKey: "a", payload: 1 }).input;
    const b = inputs.accept("k", { idempotencyKey: "b", payload: 2 }).input;
    expect(a.inputId).toMatch(new RegExp(`^in-${a.arrivalSeq}-[0-9a-f]{12}$`));
    expect(b.inputId).not.toBe(a.inputId);
    expect(inputs.get(b.inputId)?.payload).toBe(2);
    // The right arrival number with another suffix is no input.
    const forged = `in-${b.arrivalSeq}-000000000000`;
    expect(inputs.get(forged)).toBeUndefined();
    expect(codeOf(() => inputs.abandon(forged, "x"))).toBe("E_NOT_FOUND");
    const chosen = { idempotencyKey: "c", payload: 3, inputId: "in-1-abcdefabcdef" };
    expect(codeOf(() => inputs.accept("k", chosen))).toBe("E_INVALID_ARGUMENT");
    const mine = inputs.accept("k", { ...chosen, inputId: "in-1" }).input;
    expect(inputs.get("in-1")).toEqual(mine);
    expect(inputs.abandon("in-1", "gave up").state).toBe("completed");
  });
});
