import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import type { ProcessOwner } from "../../db/process-owner.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { InputStore } from "./input-store.js";
import { TranscriptBranches } from "./transcript-branches.js";
import { TranscriptStore } from "./transcript-store.js";

const RUNS = Number(process.env.INPUT_MODEL_RUNS ?? 40);
const SESSIONS = ["k0", "k1"];
const OWNERS = ["o0", "o1"];
const LEASE = 100;

const tempDir = useTempDirs();

type Op =
  | { kind: "accept"; s: number; key: number }
  | { kind: "acceptClaim"; s: number; key: number; o: number }
  | { kind: "release"; o: number; pick: number }
  | { kind: "claim"; s: number; o: number; limit: number }
  | { kind: "complete"; o: number; pick: number }
  | { kind: "advance"; ms: number }
  | { kind: "kill"; o: number }
  | { kind: "recover"; s: number }
  | { kind: "requeue"; pick: number }
  | { kind: "abandon"; pick: number };

const s = fc.nat(SESSIONS.length - 1);
const o = fc.nat(OWNERS.length - 1);
const pick = fc.nat(30);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("accept" as const), s, key: fc.nat(5) }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("acceptClaim" as const), s, key: fc.nat(5), o }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("release" as const), o, pick }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("claim" as const),
      s,
      o,
      limit: fc.integer({ min: 1, max: 3 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("complete" as const), o, pick }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("advance" as const),
      ms: fc.constantFrom(1, 50, 100, 250),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("kill" as const), o }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("recover" as const), s }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("requeue" as const), pick }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("abandon" as const), pick }) },
);

/** The model's view of one input: what the store must hold for it. */
interface ModelInput {
  id: string;
  session: string;
  key: string;
  state: "accepted" | "claimed" | "completed" | "interrupted";
  owner: string | null;
  process: ProcessOwner | null;
  expiresAt: number | null;
  attempts: number;
}

/**
 * A gateway world: two owner names, each running in a fake process that `kill` ends (the name
 * then comes back in a new process, as a restarted gateway would), on a fake clock.
 */
class World {
  now = 1_000;
  nextPid = 100;
  readonly dead = new Set<number>();
  readonly processes = OWNERS.map(() => this.newProcess());
  readonly model: ModelInput[] = [];
  readonly stores: InputStore[];

  constructor(
    private readonly make: (
      process: ProcessOwner,
      alive: (p: ProcessOwner) => boolean,
      clock: () => number,
    ) => InputStore,
  ) {
    this.stores = this.processes.map((p) => this.storeFor(p));
  }

  newProcess(): ProcessOwner {
    return { pid: this.nextPid++, started: 7 };
  }

  storeFor(process: ProcessOwner): InputStore {
    return this.make(
      process,
      (p) => !this.dead.has(p.pid),
      () => this.now,
    );
  }
}

function accept(w: World, store: InputStore, session: string, key: string): void {
  const result = store.accept(session, { idempotencyKey: key, payload: { key } });
  const known = w.model.find((m) => m.session === session && m.key === key);
  expect(result.duplicate).toBe(known !== undefined);
  if (known) {
    expect(result.input.inputId).toBe(known.id);
    return;
  }
  w.model.push({
    id: result.input.inputId,
    session,
    key,
    state: "accepted",
    owner: null,
    process: null,
    expiresAt: null,
    attempts: 0,
  });
}

/** `accept` with `claim`: a new input is leased to the owner at once; a redelivery changes nothing. */
function acceptClaim(w: World, op: Extract<Op, { kind: "acceptClaim" }>): void {
  const session = SESSIONS[op.s] as string;
  const key = `key-${op.key}`;
  const owner = OWNERS[op.o] as string;
  const store = w.stores[op.o] as InputStore;
  const result = store.accept(
    session,
    { idempotencyKey: key, payload: { key } },
    { claim: { owner, leaseMs: LEASE } },
  );
  const known = w.model.find((m) => m.session === session && m.key === key);
  expect(result.duplicate).toBe(known !== undefined);
  if (known) {
    expect(result.input.inputId).toBe(known.id);
    return;
  }
  w.model.push({
    id: result.input.inputId,
    session,
    key,
    state: "claimed",
    owner,
    process: w.processes[op.o] as ProcessOwner,
    expiresAt: w.now + LEASE,
    attempts: 1,
  });
}

function release(w: World, o: number, m: ModelInput): void {
  const store = w.stores[o] as InputStore;
  const held = holds(w, m, o);
  refusedUnless(held, () => store.release(m.id, OWNERS[o] as string));
  if (held) Object.assign(m, { state: "accepted", expiresAt: null });
}

function claim(w: World, op: Extract<Op, { kind: "claim" }>): void {
  const session = SESSIONS[op.s] as string;
  const owner = OWNERS[op.o] as string;
  const got = w.stores[op.o]?.claim(session, owner, { leaseMs: LEASE, limit: op.limit }) ?? [];
  const expected = w.model
    .filter((m) => m.session === session && m.state === "accepted")
    .slice(0, op.limit);
  expect(got.map((i) => i.inputId)).toEqual(expected.map((m) => m.id));
  for (const m of expected) {
    Object.assign(m, {
      state: "claimed",
      owner,
      process: w.processes[op.o],
      expiresAt: w.now + LEASE,
      attempts: m.attempts + 1,
    });
  }
}

function holds(w: World, m: ModelInput, o: number): boolean {
  const process = w.processes[o] as ProcessOwner;
  return m.state === "claimed" && m.owner === OWNERS[o] && m.process?.pid === process.pid;
}

function complete(w: World, o: number, m: ModelInput): void {
  const store = w.stores[o] as InputStore;
  const attempt = () => store.complete(m.id, OWNERS[o] as string, { deliveryIds: [`d-${m.id}`] });
  if (m.state === "completed" && m.owner === OWNERS[o]) {
    expect(attempt().state).toBe("completed");
  } else if (holds(w, m, o)) {
    expect(attempt().outcome?.deliveryIds).toEqual([`d-${m.id}`]);
    Object.assign(m, { state: "completed", expiresAt: null });
  } else {
    expect(attempt).toThrowError(expect.objectContaining({ code: "E_CONFLICT" }));
  }
}

function recover(w: World, session: string): void {
  for (const m of w.model) {
    const lapsed = m.session === session && m.state === "claimed" && (m.expiresAt ?? 0) <= w.now;
    if (lapsed && w.dead.has(m.process?.pid ?? 0))
      Object.assign(m, { state: "interrupted", expiresAt: null });
  }
  const got = w.stores[0]?.recover(session).interrupted.map((i) => i.inputId);
  expect(got).toEqual(
    w.model.filter((m) => m.session === session && m.state === "interrupted").map((m) => m.id),
  );
}

function refusedUnless(allowed: boolean, fn: () => unknown): void {
  if (allowed) {
    fn();
    return;
  }
  try {
    fn();
    expect.unreachable("expected E_CONFLICT");
  } catch (error) {
    expect(isStateError(error, "E_CONFLICT")).toBe(true);
  }
}

/** The gateway's decisions on an interrupted (or waiting) input. */
function decide(w: World, op: Extract<Op, { kind: "requeue" | "abandon" }>, m: ModelInput): void {
  const store = w.stores[0] as InputStore;
  if (op.kind === "requeue") {
    refusedUnless(m.state === "interrupted", () => store.requeue(m.id));
    if (m.state === "interrupted") m.state = "accepted";
    return;
  }
  const open = m.state === "accepted" || m.state === "interrupted";
  refusedUnless(open, () => store.abandon(m.id, "gave up"));
  if (open) Object.assign(m, { state: "completed", expiresAt: null });
}

function kill(w: World, o: number): void {
  w.dead.add((w.processes[o] as ProcessOwner).pid);
  w.processes[o] = w.newProcess();
  w.stores[o] = w.storeFor(w.processes[o] as ProcessOwner);
}

function apply(w: World, op: Op): void {
  const m = "pick" in op ? w.model[op.pick % Math.max(1, w.model.length)] : undefined;
  if (op.kind === "accept")
    accept(w, w.stores[0] as InputStore, SESSIONS[op.s] as string, `key-${op.key}`);
  else if (op.kind === "acceptClaim") acceptClaim(w, op);
  else if (op.kind === "release") m && release(w, op.o, m);
  else if (op.kind === "claim") claim(w, op);
  else if (op.kind === "complete") m && complete(w, op.o, m);
  else if (op.kind === "advance") w.now += op.ms;
  else if (op.kind === "kill") kill(w, op.o);
  else if (op.kind === "recover") recover(w, SESSIONS[op.s] as string);
  else if (m) decide(w, op, m);
}

/** Each session key's claimed inputs, however they were claimed, in arrival order. */
function checkClaimed(w: World): void {
  for (const session of SESSIONS) {
    const got = w.stores[0]?.list({ state: "claimed", sessionKey: session }) ?? [];
    expect(got.map((i) => i.inputId)).toEqual(
      w.model.filter((m) => m.session === session && m.state === "claimed").map((m) => m.id),
    );
  }
}

function checkRows(w: World): void {
  checkClaimed(w);
  const rows = w.stores[0]?.list({ limit: 10_000 }) ?? [];
  expect(
    rows.map((r) => ({
      id: r.inputId,
      state: r.state,
      owner: r.lease?.owner ?? null,
      pid: r.lease?.process.pid ?? null,
      expiresAt: r.state === "claimed" ? r.lease?.expiresAt : null,
      attempts: r.attempts,
    })),
  ).toEqual(
    w.model.map((m) => ({
      id: m.id,
      state: m.state,
      owner: m.owner,
      pid: m.process?.pid ?? null,
      expiresAt: m.state === "claimed" ? m.expiresAt : null,
      attempts: m.attempts,
    })),
  );
}

describe("InputStore against a model", () => {
  it("accept (and accept with claim), claim, release, complete, lease expiry, owner death, recover, requeue and abandon", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80, size: "max" }), (ops) => {
        const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
        try {
          const transcripts = new TranscriptStore(db, "main");
          const branches = new TranscriptBranches(db, transcripts);
          const w = new World(
            (process, ownerAlive, clock) =>
              new InputStore(db, transcripts, branches, { process, ownerAlive, clock }),
          );
          for (const step of ops) {
            apply(w, step);
            checkRows(w);
          }
        } finally {
          db.close();
        }
      }),
      { numRuns: RUNS },
    );
  });
});
