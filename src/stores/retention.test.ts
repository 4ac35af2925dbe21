import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../db/database.js";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { InputStore } from "./agent/input-store.js";
import { TranscriptBranches } from "./agent/transcript-branches.js";
import { TranscriptStore } from "./agent/transcript-store.js";
import { OUTBOUND_DELIVERY_QUEUE } from "./global/delivery-queue-rows.js";
import { type ClaimedDelivery, DeliveryQueueStore } from "./global/delivery-queue-store.js";
import { expectStateError, simulatedClock, useGlobalDb } from "./global/test-support/global-db.js";
import { checkRetention, DEFAULT_RETENTION, pruneInputs, pruneReceipts } from "./retention.js";

const tempDir = useTempDirs();
const openGlobal = useGlobalDb();
const DAY = 24 * 60 * 60 * 1000;
const Q = OUTBOUND_DELIVERY_QUEUE;

function inputRig() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const clock = simulatedClock(0);
  const transcripts = new TranscriptStore(db, "main");
  const inputs = new InputStore(db, transcripts, new TranscriptBranches(db, transcripts), {
    clock: clock.now,
  });
  /** An input of `key` accepted now, left in `state` (completed now when so). */
  const add = (key: string, name: string, state: string) => {
    const { input } = inputs.accept(key, { idempotencyKey: name, payload: name, inputId: name });
    if (state === "accepted") return;
    // Claim hands out the key's oldest waiting inputs first: the others go back.
    for (const held of inputs.claim(key, "turn", { leaseMs: 1000, limit: 1000 })) {
      if (held.inputId !== name) inputs.release(held.inputId, "turn");
    }
    if (state === "completed") inputs.complete(name, "turn");
    if (state === "interrupted") {
      db.prepare("UPDATE inputs SET state = 'interrupted' WHERE input_id = ?").run(input.inputId);
    }
  };
  return { db, clock, add };
}

function inputIds(db: Database): string[] {
  return db
    .prepare<{ input_id: string }>("SELECT input_id FROM inputs ORDER BY arrival_seq")
    .all()
    .map((r) => r.input_id);
}

describe("retention of completed inputs", () => {
  it("deletes completed inputs past the age, never an open one, never the newest", () => {
    const { db, clock, add } = inputRig();
    add("a", "old-done", "completed");
    add("a", "old-waiting", "accepted");
    add("b", "old-claimed", "claimed");
    add("b", "old-interrupted", "interrupted");
    clock.set(20 * DAY);
    add("a", "recent-done", "completed");
    clock.set(31 * DAY);
    const policy = checkRetention({ inputsMaxAgeMs: 30 * DAY });
    expect(pruneInputs(db, policy, clock.now())).toBe(1);
    expect(inputIds(db)).toEqual(["old-waiting", "old-claimed", "old-interrupted", "recent-done"]);
    // Past its age too now, but the newest input of the agent: kept, so its rowid is never reused.
    clock.set(60 * DAY);
    expect(pruneInputs(db, policy, clock.now())).toBe(0);
    expect(inputIds(db)).toContain("recent-done");
    add("c", "later", "accepted");
    expect(pruneInputs(db, policy, clock.now())).toBe(1);
    expect(inputIds(db)).toEqual(["old-waiting", "old-claimed", "old-interrupted", "later"]);
  });

  it("keeps at most the latest N completed inputs of each session key", () => {
    const { db, clock, add } = inputRig();
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      add("a", `a${i}`, "completed");
      add("b", `b${i}`, i === 0 ? "accepted" : "completed");
    }
    add("z", "newest", "accepted");
    const policy = checkRetention({ inputsPerSession: 2 });
    expect(pruneInputs(db, policy, clock.now())).toBe(5);
    expect(inputIds(db)).toEqual(["b0", "a3", "b3", "a4", "b4", "newest"]);
    expect(pruneInputs(db, policy, clock.now())).toBe(0);
  });
});

function receiptRig() {
  const db = openGlobal();
  const clock = simulatedClock(0);
  const queue = new DeliveryQueueStore(db, { clock: clock.now, leaseMs: 1000 });
  /** An entry of `queueName` enqueued now and taken to `status` now. */
  const add = (id: string, status: string, queueName = Q) => {
    // A pending entry is due only far ahead, so that claims made later take the entry added then.
    const availableAt = status === "pending" ? clock.now() + 1000 * DAY : undefined;
    queue.enqueue(queueName, {
      id,
      payload: { text: id },
      ...(availableAt ? { availableAt } : {}),
    });
    if (status === "pending") return;
    const claimed = queue.claim(queueName, "gateway") as ClaimedDelivery;
    if (status === "sent") queue.settle(queueName, id, claimed.leaseId);
    if (status === "failed") queue.fail(queueName, id, claimed.leaseId, "no", { permanent: true });
    if (status === "sending" || status === "unknown")
      queue.beginSend(queueName, id, claimed.leaseId);
  };
  const statuses = () =>
    db
      .prepare<{ id: string; status: string }>(
        "SELECT id, status FROM delivery_queue_entries ORDER BY id",
      )
      .all()
      .map((r) => `${r.id}:${r.status}`);
  return { db, clock, queue, add, statuses };
}

describe("retention of delivery receipts", () => {
  it("deletes sent and failed deliveries past the age, never pending, sending or unknown ones", () => {
    const { db, clock, queue, add, statuses } = receiptRig();
    add("1-sent", "sent");
    add("2-failed", "failed");
    add("3-pending", "pending");
    add("4-unknown", "unknown");
    clock.advance(5000);
    queue.reconcileUnknown(Q);
    add("5-sending", "sending");
    clock.set(10 * DAY);
    add("6-sent-recent", "sent");
    clock.set(31 * DAY);
    const policy = checkRetention({ receiptsMaxAgeMs: 30 * DAY });
    expect(pruneReceipts(db, policy, clock.now())).toBe(2);
    expect(statuses()).toEqual([
      "3-pending:pending",
      "4-unknown:unknown",
      "5-sending:sending",
      "6-sent-recent:sent",
    ]);
    expect(pruneReceipts(db, policy, clock.now())).toBe(0);
  });

  it("keeps at most the latest N settled deliveries of each queue", () => {
    const { db, clock, add, statuses } = receiptRig();
    for (let i = 0; i < 4; i++) {
      clock.advance(1000);
      add(`a${i}`, i === 1 ? "failed" : "sent");
      add(`s${i}`, "sent", "session-delivery");
    }
    add("p", "pending");
    const policy = checkRetention({ receiptsPerQueue: 2 });
    expect(pruneReceipts(db, policy, clock.now())).toBe(4);
    expect(statuses()).toEqual(["a2:sent", "a3:sent", "p:pending", "s2:sent", "s3:sent"]);
  });
});

describe("checkRetention", () => {
  it("fills in the defaults and refuses unknown or invalid options by name", () => {
    expect(checkRetention()).toEqual(DEFAULT_RETENTION);
    expect(DEFAULT_RETENTION).toEqual({
      inputsMaxAgeMs: 30 * DAY,
      inputsPerSession: 1000,
      receiptsMaxAgeMs: 30 * DAY,
      receiptsPerQueue: 100_000,
    });
    expect(checkRetention({ inputsPerSession: 5 }).inputsPerSession).toBe(5);
    expect(Object.isFrozen(checkRetention({}))).toBe(true);
    expect(() => checkRetention({ inputsPerSesion: 5 } as object)).toThrow(/inputsPerSesion/);
    expectStateError(
      () => checkRetention({ receiptsMaxAgeMs: -1 }),
      "E_INVALID_ARGUMENT",
      /receiptsMaxAgeMs/,
    );
  });
});

describe("the home's retention policy", () => {
  it("is applied by home.sweepExpired to the open agents and the global database", () => {
    const home = openStateHome({
      home: tempDir(),
      retention: { inputsPerSession: 1, receiptsPerQueue: 0 },
    });
    expect(home.retention).toMatchObject({ inputsPerSession: 1, receiptsPerQueue: 0 });
    for (const name of ["k1", "k2"]) {
      home.inputs.accept("main", "k", { idempotencyKey: name, payload: 1, inputId: name });
      home.inputs.claim("main", "k", "turn", { leaseMs: 60_000 });
      home.inputs.complete("main", name, "turn");
    }
    home.inputs.accept("main", "w", { idempotencyKey: "w", payload: 1, inputId: "waiting" });
    home.queue.enqueue(Q, { id: "sent", payload: {} });
    const claimed = home.queue.claim(Q, "gateway") as ClaimedDelivery;
    home.queue.settle(Q, "sent", claimed.leaseId);
    home.queue.enqueue(Q, { id: "pending", payload: {} });
    const report = home.sweepExpired();
    expect(report.retention).toEqual({ receipts: 1, inputs: { main: 1 } });
    expect(inputIds(home.agent("main").db)).toEqual(["k2", "waiting"]);
    const ids = home.db.prepare<{ id: string }>("SELECT id FROM delivery_queue_entries").all();
    expect(ids).toEqual([{ id: "pending" }]);
    home.close();
  });

  it("refuses an unknown retention option before opening anything", () => {
    const dir = join(tempDir(), "home");
    expect(() => openStateHome({ home: dir, retention: { keepDays: 3 } as object })).toThrow(
      /keepDays/,
    );
    expect(() => openStateHome({ home: dir, create: false })).toThrow(/no agentstate home/);
  });
});
