import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../db/database.js";
import { isStateError, type StateErrorCode } from "../../db/errors.js";
import type { ProcessOwner } from "../../db/process-owner.js";
import { openStateHome } from "../../home.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { inputStoreOf } from "./agent-stores.js";
import { InputStore } from "./input-store.js";
import { TranscriptBranches } from "./transcript-branches.js";
import { TranscriptStore } from "./transcript-store.js";

const tempDir = useTempDirs();
const LEASE = 1000;

interface Rig {
  db: Database;
  now: { t: number };
  transcripts: TranscriptStore;
  /** A store acting as the process `owner` (default: this one, alive). */
  store(process?: ProcessOwner): InputStore;
}

function rig(): Rig {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const now = { t: 1_000_000 };
  const transcripts = new TranscriptStore(db, "main");
  const branches = new TranscriptBranches(db, transcripts);
  return {
    db,
    now,
    transcripts,
    store: (process) =>
      new InputStore(db, transcripts, branches, {
        clock: () => now.t,
        ...(process ? { process } : {}),
      }),
  };
}

/** This pid with a start time it never had: `processOwnerAlive` judges it dead, as a killed owner. */
const GHOST: ProcessOwner = { pid: process.pid, started: -1 };

function rows(db: Database) {
  return db
    .prepare<Record<string, unknown>>(
      `SELECT input_id, session_key, state, lease_owner, lease_expires_at, attempts, outcome_json
       FROM inputs ORDER BY arrival_seq`,
    )
    .all();
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

const assistant = (text: string, calls: string[] = []) => ({
  type: "message",
  message: {
    role: "assistant",
    content: [
      { type: "text", text },
      ...calls.map((id) => ({ type: "toolCall", id, name: "exec", arguments: { cmd: id } })),
    ],
  },
});
const toolResult = (id: string) => ({
  type: "message",
  message: { role: "toolResult", toolCallId: id, toolName: "exec", content: [], isError: false },
});

describe("InputStore.accept", () => {
  it("records a message once; a retry gets the first record back, unchanged", () => {
    const { db, store } = rig();
    const inputs = store();
    const first = inputs.accept("agent:main:main", {
      idempotencyKey: "tg:42",
      payload: { text: "hi" },
      channel: "telegram",
      conversationId: "conv-1",
      receivedAt: 5,
    });
    expect(first.duplicate).toBe(false);
    const retry = inputs.accept("agent:main:main", {
      idempotencyKey: "tg:42",
      payload: { text: "changed" },
    });
    expect(retry).toEqual({ input: first.input, duplicate: true });
    expect(retry.input.payload).toEqual({ text: "hi" });
    // The same key in another session is another message.
    expect(
      inputs.accept("agent:main:other", { idempotencyKey: "tg:42", payload: 1 }).duplicate,
    ).toBe(false);
    const stored = db
      .prepare<Record<string, unknown>>("SELECT * FROM inputs ORDER BY arrival_seq")
      .all();
    expect(stored).toHaveLength(2);
    expect(stored[0]).toMatchObject({
      input_id: first.input.inputId,
      payload_json: '{"text":"hi"}',
      channel: "telegram",
      conversation_id: "conv-1",
      received_at: 5,
      accepted_at: 1_000_000,
      state: "accepted",
      attempts: 0,
    });
  });

  it("a retry after completion gets the outcome it was answered with", () => {
    const { store } = rig();
    const inputs = store();
    const { input } = inputs.accept("k", { idempotencyKey: "m1", payload: "hi" });
    inputs.claim("k", "gw", { leaseMs: LEASE });
    inputs.complete(input.inputId, "gw", {
      sessionId: "s1",
      events: [assistant("hello")],
      deliveryIds: ["d1"],
    });
    const retry = inputs.accept("k", { idempotencyKey: "m1", payload: "hi" });
    expect(retry.duplicate).toBe(true);
    expect(retry.input.state).toBe("completed");
    expect(retry.input.outcome).toMatchObject({ sessionId: "s1", deliveryIds: ["d1"] });
    expect(retry.input.outcome?.eventIds).toHaveLength(1);
  });

  it("refuses a payload that is not JSON and a taken input id", () => {
    const { store } = rig();
    const inputs = store();
    expect(
      codeOf(() => inputs.accept("k", { idempotencyKey: "a", payload: undefined as never })),
    ).toBe("E_INVALID_ARGUMENT");
    inputs.accept("k", { idempotencyKey: "a", payload: 1, inputId: "i1" });
    expect(
      codeOf(() => inputs.accept("k", { idempotencyKey: "b", payload: 1, inputId: "i1" })),
    ).toBe("E_CONFLICT");
  });
});

describe("InputStore.claim", () => {
  it("leases a session's waiting inputs in arrival order, each once", () => {
    const { db, now, store } = rig();
    const inputs = store();
    const ids = ["a", "b", "c"].map(
      (key) => inputs.accept("k1", { idempotencyKey: key, payload: key }).input.inputId,
    );
    inputs.accept("k2", { idempotencyKey: "x", payload: "x" });
    const firstTwo = inputs.claim("k1", "gw", { leaseMs: LEASE, limit: 2 });
    expect(firstTwo.map((i) => i.inputId)).toEqual(ids.slice(0, 2));
    expect(firstTwo[0]?.lease).toEqual({
      owner: "gw",
      process: expect.objectContaining({ pid: process.pid }),
      expiresAt: now.t + LEASE,
    });
    expect(inputs.claim("k1", "gw", { leaseMs: LEASE, limit: 5 }).map((i) => i.inputId)).toEqual([
      ids[2],
    ]);
    expect(inputs.claim("k1", "gw", { leaseMs: LEASE })).toEqual([]);
    expect(rows(db).map((r) => [r.session_key, r.state, r.attempts])).toEqual([
      ["k1", "claimed", 1],
      ["k1", "claimed", 1],
      ["k1", "claimed", 1],
      ["k2", "accepted", 0],
    ]);
  });

  it("a lapsed lease whose owner lives stays claimed: not re-claimed, not interrupted, extendable", () => {
    const { db, now, store } = rig();
    const inputs = store();
    const { input } = inputs.accept("k", { idempotencyKey: "a", payload: 1 });
    inputs.claim("k", "gw", { leaseMs: LEASE });
    now.t += LEASE * 5;
    expect(store().claim("k", "other", { leaseMs: LEASE })).toEqual([]);
    expect(inputs.recover("k").interrupted).toEqual([]);
    expect(inputs.extend(input.inputId, "gw", { leaseMs: LEASE }).lease?.expiresAt).toBe(
      now.t + LEASE,
    );
    expect(codeOf(() => inputs.extend(input.inputId, "other", { leaseMs: LEASE }))).toBe(
      "E_CONFLICT",
    );
    expect(inputs.complete(input.inputId, "gw").state).toBe("completed");
    expect(rows(db)[0]?.state).toBe("completed");
  });

  it("release gives a held input back to be claimed again", () => {
    const { store } = rig();
    const inputs = store();
    const { input } = inputs.accept("k", { idempotencyKey: "a", payload: 1 });
    inputs.claim("k", "gw", { leaseMs: LEASE });
    expect(inputs.release(input.inputId, "gw").state).toBe("accepted");
    expect(inputs.claim("k", "gw2", { leaseMs: LEASE })[0]?.attempts).toBe(2);
  });
});

describe("InputStore.complete", () => {
  it("is refused unless the owner in this process holds the input", () => {
    const { db, store } = rig();
    const inputs = store();
    const { input } = inputs.accept("k", { idempotencyKey: "a", payload: 1 });
    expect(codeOf(() => inputs.complete(input.inputId, "gw"))).toBe("E_CONFLICT");
    inputs.claim("k", "gw", { leaseMs: LEASE });
    expect(codeOf(() => inputs.complete(input.inputId, "other"))).toBe("E_CONFLICT");
    // The same owner name in another process (a restarted gateway) does not hold it either.
    expect(codeOf(() => store({ pid: 1, started: 1 }).complete(input.inputId, "gw"))).toBe(
      "E_CONFLICT",
    );
    expect(codeOf(() => inputs.complete("nope", "gw"))).toBe("E_NOT_FOUND");
    expect(rows(db)[0]?.state).toBe("claimed");
  });

  it("appends the turn's events and completes in one transaction; a repeat writes nothing", () => {
    const { db, store, transcripts } = rig();
    const inputs = store();
    const { input } = inputs.accept("k", { idempotencyKey: "a", payload: 1 });
    inputs.claim("k", "gw", { leaseMs: LEASE });
    const done = inputs.complete(input.inputId, "gw", {
      sessionId: "s1",
      events: [assistant("one"), assistant("two")],
      eventIds: ["earlier"],
      deliveryIds: ["d1"],
      data: { tokens: 3 },
    });
    const stored = transcripts.read("s1").filter((e) => e.event.type === "message");
    expect(done.outcome).toEqual({
      sessionId: "s1",
      eventIds: ["earlier", ...stored.map((e) => e.event.id)],
      deliveryIds: ["d1"],
      data: { tokens: 3 },
    });
    expect(JSON.parse(String(rows(db)[0]?.outcome_json))).toEqual(done.outcome);
    const events = count(db, "transcript_events");
    const again = inputs.complete(input.inputId, "gw", {
      sessionId: "s1",
      events: [assistant("three")],
    });
    expect(again).toEqual(done);
    expect(count(db, "transcript_events")).toBe(events);
    expect(codeOf(() => inputs.complete(input.inputId, "other"))).toBe("E_CONFLICT");
  });

  it("leaves the input claimed and writes no row when the append fails", () => {
    const { db, store } = rig();
    const inputs = store();
    const { input } = inputs.accept("k", { idempotencyKey: "a", payload: 1 });
    inputs.claim("k", "gw", { leaseMs: LEASE });
    const noType = { message: { role: "assistant", content: [] } } as never;
    expect(
      codeOf(() =>
        inputs.complete(input.inputId, "gw", {
          sessionId: "s1",
          events: [assistant("ok"), noType],
        }),
      ),
    ).toBe("E_INVALID_ARGUMENT");
    const orphan = { ...assistant("late"), parentId: "missing" };
    expect(
      codeOf(() =>
        inputs.complete(input.inputId, "gw", {
          sessionId: "s1",
          events: [assistant("ok"), orphan],
        }),
      ),
    ).toBe("E_NOT_FOUND");
    // The append succeeds and the completion after it fails (an outcome past the size limit).
    const huge = { blob: "x".repeat(300 * 1024) };
    expect(
      codeOf(() =>
        inputs.complete(input.inputId, "gw", {
          sessionId: "s1",
          events: [assistant("ok")],
          data: huge,
        }),
      ),
    ).toBe("E_TOO_LARGE");
    expect(rows(db)[0]).toMatchObject({ state: "claimed", outcome_json: null });
    expect(count(db, "transcript_events")).toBe(0);
    expect(count(db, "sessions")).toBe(0);
    // Nothing was left half-done: the same completion with good events goes through.
    expect(
      inputs.complete(input.inputId, "gw", { sessionId: "s1", events: [assistant("ok")] }).state,
    ).toBe("completed");
    expect(count(db, "transcript_events")).toBe(2);
  });
});

describe("InputStore.recover", () => {
  it("interrupts a lapsed claim of a dead owner; requeue puts it back in its place, abandon ends it", () => {
    const { db, now, store } = rig();
    const inputs = store();
    const ghost = store(GHOST);
    const a = inputs.accept("k", { idempotencyKey: "a", payload: 1 }).input;
    const b = inputs.accept("k", { idempotencyKey: "b", payload: 2 }).input;
    const c = inputs.accept("k", { idempotencyKey: "c", payload: 3 }).input;
    ghost.claim("k", "gw", { leaseMs: LEASE, limit: 2 });
    expect(inputs.recover("k").interrupted).toEqual([]); // lease still running
    now.t += LEASE;
    const recovered = inputs.recover("k");
    expect(recovered.interrupted.map((i) => i.inputId)).toEqual([a.inputId, b.inputId]);
    expect(recovered.interrupted[0]?.lease).toMatchObject({ owner: "gw", process: GHOST });
    // Interrupted inputs are not handed out again: the next claim gets c.
    expect(inputs.claim("k", "gw2", { leaseMs: LEASE }).map((i) => i.inputId)).toEqual([c.inputId]);
    expect(inputs.requeue(a.inputId).state).toBe("accepted");
    expect(codeOf(() => inputs.requeue(a.inputId))).toBe("E_CONFLICT");
    expect(inputs.abandon(b.inputId, "turn half-ran; user told").outcome).toEqual({
      sessionId: null,
      eventIds: [],
      deliveryIds: [],
      abandoned: "turn half-ran; user told",
    });
    expect(inputs.claim("k", "gw2", { leaseMs: LEASE })[0]).toMatchObject({
      inputId: a.inputId,
      attempts: 2,
    });
    expect(rows(db).map((r) => r.state)).toEqual(["claimed", "completed", "claimed"]);
    expect(inputs.accept("k", { idempotencyKey: "b", payload: 2 }).input.outcome?.abandoned).toBe(
      "turn half-ran; user told",
    );
  });

  it("reports the tool calls on the session's current branch that have no result", () => {
    const { store, transcripts } = rig();
    const inputs = store();
    transcripts.append(
      "s1",
      { type: "message", message: { role: "user", content: "go" } },
      { sessionKey: "k" },
    );
    const call = transcripts.append("s1", assistant("running", ["t1", "t2"]));
    transcripts.append("s1", toolResult("t1"));
    expect(inputs.recover("k")).toEqual({
      interrupted: [],
      sessionId: "s1",
      danglingToolCalls: [
        { eventId: call.event.id, toolCallId: "t2", name: "exec", arguments: { cmd: "t2" } },
      ],
    });
    transcripts.append("s1", toolResult("t2"));
    expect(inputs.recover("k").danglingToolCalls).toEqual([]);
    expect(inputs.recover("unknown-key")).toEqual({
      interrupted: [],
      sessionId: null,
      danglingToolCalls: [],
    });
  });
});

describe("InputStore.recoverAll", () => {
  it("recovers every session key a dead owner held, past a page of keys, and only those", () => {
    const { db, now, store } = rig();
    const inputs = store();
    const ghost = store(GHOST);
    const expected = new Set<string>();
    // 2,400 keys (more than a page of the key scan): every third claimed by a dead owner, half of
    // those through accept's own claim; the others claimed by this live process or left waiting.
    db.tx(() => {
      for (let k = 0; k < 2_400; k++) {
        const key = `key-${k}`;
        if (k % 3 === 0 && k % 2 === 0) {
          const claim = { owner: "gw-dead", leaseMs: LEASE };
          expected.add(
            ghost.accept(key, { idempotencyKey: "m", payload: k }, { claim }).input.inputId,
          );
          continue;
        }
        const { input } = inputs.accept(key, { idempotencyKey: "m", payload: k });
        if (k % 3 === 0) {
          ghost.claim(key, "gw-dead", { leaseMs: LEASE });
          expected.add(input.inputId);
        } else if (k % 3 === 1) {
          inputs.claim(key, "gw-live", { leaseMs: LEASE });
        }
      }
    });
    expect(inputs.recoverAll()).toEqual([]); // no lease has lapsed yet
    now.t += LEASE;
    const recovered = inputs.recoverAll();
    const ids = recovered.flatMap((r) => r.interrupted.map((i) => i.inputId));
    expect(new Set(ids)).toEqual(expected);
    expect(ids).toHaveLength(expected.size);
    for (const r of recovered)
      expect(r.interrupted.every((i) => i.sessionKey === r.sessionKey)).toBe(true);
    // The rows agree: exactly those inputs are interrupted, the live owner's still claimed.
    const states = db
      .prepare<{ input_id: string; state: string }>("SELECT input_id, state FROM inputs")
      .all();
    const interrupted = states.filter((r) => r.state === "interrupted").map((r) => r.input_id);
    expect(new Set(interrupted)).toEqual(expected);
    expect(states.filter((r) => r.state === "claimed")).toHaveLength(800);
    // Interrupted inputs stay reported until the gateway decides.
    expect(inputs.recoverAll().flatMap((r) => r.interrupted)).toHaveLength(expected.size);
  });
});

describe("home.inputs", () => {
  it("works by agent id, and the agent's public stores have no inputs", () => {
    const home = openStateHome({ home: tempDir() });
    try {
      const { input } = home.inputs.accept("main", "agent:main:main", {
        idempotencyKey: "m",
        payload: "hi",
      });
      const [claimed] = home.inputs.claim("main", "agent:main:main", "gw", { leaseMs: LEASE });
      expect(claimed?.inputId).toBe(input.inputId);
      home.inputs.complete("main", input.inputId, "gw", {
        sessionId: "s1",
        events: [assistant("hello")],
      });
      expect(home.inputs.get("main", input.inputId)?.state).toBe("completed");
      expect(home.transcripts.read({ agentId: "main", sessionId: "s1" })).toHaveLength(2);
      expect(home.inputs.list("main", { state: "completed" })).toHaveLength(1);
      const agent = home.agent("main");
      expect("inputs" in agent).toBe(false);
      expect(Object.keys(agent)).not.toContain("inputStore");
      expect(inputStoreOf(agent).get(input.inputId)?.state).toBe("completed");
      expect(codeOf(() => home.inputs.list("ghost"))).toBe("E_NOT_FOUND");
    } finally {
      home.close();
    }
  });
});
