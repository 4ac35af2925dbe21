import { randomBytes } from "node:crypto";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { isStateError, StateError } from "../../db/errors.js";
import {
  currentProcessOwner,
  type ProcessOwner,
  processOwnerAlive,
} from "../../db/process-owner.js";
import { checkSessionId } from "../../ids.js";
import { type DanglingToolCall, danglingToolCalls } from "../../transcript/dangling-tool-calls.js";
import {
  type Clock,
  checkInteger,
  checkLimit,
  checkOptions,
  checkText,
  checkTime,
  encodeJson,
  optionalText,
} from "../checks.js";
import { checkChosenId, idParams } from "./input-ids.js";
import {
  INPUT_STATES,
  type InputOutcome,
  type InputRecord,
  type InputRow,
  type InputState,
  inputFromRow,
} from "./input-rows.js";
import { ACTIVE_SESSION_SQL, type AcceptRow, INPUT_LIST_SQL, INPUT_SQL } from "./input-sql.js";
import type {
  AcceptOptions,
  AcceptResult,
  ClaimOptions,
  InputCompletion,
  InputListOptions,
  InputStoreOptions,
  NewInput,
  RecoveredInputs,
  RecoveredSessionInputs,
} from "./input-types.js";
import { type InputView, keysToRecover, viewInputs } from "./input-views.js";
import { MAX_SESSION_KEY_LENGTH } from "./session-store.js";
import type { TranscriptBranches } from "./transcript-branches.js";
import type { TranscriptStore } from "./transcript-store.js";

export type { DanglingToolCall } from "../../transcript/dangling-tool-calls.js";
export type { InputOutcome, InputRecord, InputState } from "./input-rows.js";
export type {
  AcceptOptions,
  AcceptResult,
  ClaimOptions,
  InputCompletion,
  InputListOptions,
  InputStoreOptions,
  NewInput,
  RecoveredInputs,
  RecoveredSessionInputs,
} from "./input-types.js";
export type { InputView } from "./input-views.js";

/** A message's payload is small structured data; attachments belong in blob storage. */
export const MAX_INPUT_PAYLOAD_BYTES = 256 * 1024;
const MAX_ID = 256;

const STORE_OPTIONS = ["clock", "process", "ownerAlive"];
const ACCEPT_OPTIONS = [
  "idempotencyKey",
  "payload",
  "channel",
  "conversationId",
  "receivedAt",
  "inputId",
];
const ACCEPT_EXTRAS = ["claim", "sessionId", "events"];
const COMPLETION_OPTIONS = ["sessionId", "events", "eventIds", "deliveryIds", "data"];

function checkKey(sessionKey: unknown): string {
  return checkText("session key", sessionKey, MAX_SESSION_KEY_LENGTH);
}

function checkIds(what: string, ids: readonly string[] | undefined): string[] {
  if (ids === undefined) return [];
  if (!Array.isArray(ids)) throw new StateError("E_INVALID_ARGUMENT", `${what} must be an array`);
  return ids.map((id) => checkText(what, id, MAX_ID));
}

function notFound(inputId: string): StateError {
  return new StateError("E_NOT_FOUND", `no input ${inputId}`, { details: { inputId } });
}

/**
 * Inbound inputs of an agent (`inputs`): a gateway `accept`s a channel's message (a redelivery
 * with the same idempotency key gets the first record back), a turn `claim`s the session's waiting
 * inputs in arrival order under a lease, and `complete`s them in the same transaction as its last
 * transcript append. A claimed input whose lease lapsed while its owner process is dead becomes
 * `interrupted` at `recover`, and stays so until the gateway `requeue`s or `abandon`s it: the turn
 * may have half-run, and only the gateway can judge whether its tool calls may run again.
 */
export class InputStore {
  private readonly clock: Clock;
  private readonly process: ProcessOwner;
  private readonly ownerAlive: (owner: ProcessOwner) => boolean;
  private readonly statements: { [K in keyof typeof INPUT_SQL]: SqlStatement<InputRow> };
  private readonly lists: { [K in keyof typeof INPUT_LIST_SQL]: SqlStatement<InputRow> };
  private readonly activeSession: SqlStatement<{ session_id: string | null }>;

  constructor(
    private readonly db: Database,
    private readonly transcripts: TranscriptStore,
    private readonly branches: TranscriptBranches,
    options: InputStoreOptions = {},
  ) {
    const checked = checkOptions(options, STORE_OPTIONS, "InputStore");
    this.clock = checked.clock ?? Date.now;
    this.process = checked.process ?? currentProcessOwner();
    this.ownerAlive = checked.ownerAlive ?? processOwnerAlive;
    this.statements = prepareAll(db, INPUT_SQL);
    this.lists = prepareAll(db, INPUT_LIST_SQL);
    this.activeSession = db.prepare(ACTIVE_SESSION_SQL);
  }

  /**
   * Records a message; a retry with the same key returns the first record (`duplicate: true`)
   * and does nothing else. With `claim`, a new input is leased to `claim.owner` in the same
   * statement; with `events`, they are appended to `sessionId` in the same transaction. A turn
   * that accepts with both and completes with its reply writes, for its input, the row's leaf
   * twice and one leaf of the (session key, idempotency key) index: no other B-tree.
   */
  accept(sessionKey: string, input: NewInput, options: AcceptOptions = {}): AcceptResult {
    const params = this.acceptParams(
      checkKey(sessionKey),
      checkOptions(input, ACCEPT_OPTIONS, "accept"),
    );
    const given = checkOptions(options, ACCEPT_EXTRAS, "accept");
    const events = given.events ?? [];
    if (events.length > 0 && given.sessionId === undefined) {
      throw new StateError("E_INVALID_ARGUMENT", "accept: events need a sessionId");
    }
    const sessionId = given.sessionId === undefined ? null : checkSessionId(given.sessionId);
    const lease = given.claim === undefined ? this.noLease() : this.lease(given.claim);
    if (sessionId === null || events.length === 0) return this.insert({ ...params, ...lease });
    return this.db.tx(() => {
      const result = this.insert({ ...params, ...lease });
      if (result.duplicate) return { ...result, eventIds: [] };
      const appended = this.transcripts.appendMany(sessionId, events, {
        sessionKey: params.sessionKey,
      });
      return { ...result, eventIds: appended.map((r) => r.event.id) };
    });
  }

  /**
   * Leases the session's next waiting inputs, oldest first, to `owner` in this process: an empty
   * array when none waits. Interrupted inputs are not handed out again (see `requeue`).
   */
  claim(sessionKey: string, owner: string, options: ClaimOptions): InputRecord[] {
    const { leaseMs, limit = 1 } = checkOptions(options, ["leaseMs", "limit"], "claim");
    const now = this.clock();
    const count = checkInteger("limit", limit, 1, 1000);
    const params = {
      ...this.holder(owner),
      sessionKey: checkKey(sessionKey),
      until: now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now),
    };
    const rows =
      count === 1
        ? this.statements.claimOne.all(params)
        : this.statements.claim.all({ ...params, limit: count });
    return rows.sort((a, b) => a.arrival_seq - b.arrival_seq).map(inputFromRow);
  }

  /** Moves the lease's end to `leaseMs` from now; `E_CONFLICT` unless `owner` here holds it. */
  extend(inputId: string, owner: string, options: { leaseMs: number }): InputRecord {
    const { leaseMs } = checkOptions(options, ["leaseMs"], "extend");
    const now = this.clock();
    const until = now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now);
    return this.whileHeld("extend", inputId, owner, { until });
  }

  /** Gives a held input back unanswered (a clean shutdown): it waits to be claimed again. */
  release(inputId: string, owner: string): InputRecord {
    return this.whileHeld("release", inputId, owner, {});
  }

  /**
   * Marks a held input completed, in one transaction with the append of `events` (the turn's last
   * transcript events) to `sessionId`: the input is never completed without them, and they are
   * never written twice. Completing again under the same owner returns the first record
   * unchanged; `E_CONFLICT` when `owner` in this process does not hold the input.
   */
  complete(inputId: string, owner: string, completion: InputCompletion = {}): InputRecord {
    const given = checkOptions(completion, COMPLETION_OPTIONS, "complete");
    checkText("lease owner", owner, MAX_ID);
    const events = given.events ?? [];
    if (events.length > 0 && given.sessionId === undefined) {
      throw new StateError("E_INVALID_ARGUMENT", "complete: events need a sessionId");
    }
    const sessionId = given.sessionId === undefined ? null : checkSessionId(given.sessionId);
    return this.db.tx(() => {
      const row = this.statements.byId.get(idParams(inputId));
      if (!row) throw notFound(inputId);
      if (row.state === "completed" && row.lease_owner === owner) return inputFromRow(row);
      this.checkHeld(row, owner, "complete");
      const appended =
        sessionId === null || events.length === 0
          ? []
          : this.transcripts.appendMany(sessionId, events, { sessionKey: row.session_key });
      const outcome: InputOutcome = {
        sessionId,
        eventIds: [...checkIds("event id", given.eventIds), ...appended.map((r) => r.event.id)],
        deliveryIds: checkIds("delivery id", given.deliveryIds),
        ...(given.data === undefined ? {} : { data: given.data }),
      };
      return this.whileHeld("complete", inputId, owner, {
        now: this.clock(),
        outcome: encodeJson("input outcome", outcome, MAX_INPUT_PAYLOAD_BYTES),
      });
    });
  }

  /**
   * Marks the session key's claimed inputs whose lease lapsed and whose owner process is dead as
   * interrupted, and reports every interrupted input of the key with the tool calls on the current
   * branch of its session that have no result.
   */
  recover(sessionKey: string): RecoveredInputs {
    const key = checkKey(sessionKey);
    this.db.tx(() => {
      for (const row of this.statements.lapsed.all({ sessionKey: key, now: this.clock() })) {
        const process = { pid: row.lease_owner_pid ?? 0, started: row.lease_owner_started };
        if (!this.ownerAlive(process)) this.statements.interrupt.run({ seq: row.arrival_seq });
      }
    });
    // Read after the commit: the session's events are not read under the write lock.
    const interrupted = this.list({ state: "interrupted", sessionKey: key, limit: 10_000 });
    const sessionId = this.activeSession.get({ key })?.session_id ?? null;
    return { interrupted, sessionId, danglingToolCalls: this.dangling(sessionId) };
  }

  /**
   * `recover` for every session key with a claimed or interrupted input: what a gateway runs when
   * it starts, and then now and again, since a dead owner's lease lapses only later. Each key is
   * its own transaction. Keys with nothing interrupted are left out of the answer.
   */
  recoverAll(): RecoveredSessionInputs[] {
    const found: RecoveredSessionInputs[] = [];
    for (const sessionKey of keysToRecover((options) => this.list(options))) {
      const recovered = this.recover(sessionKey);
      if (recovered.interrupted.length > 0) found.push({ sessionKey, ...recovered });
    }
    return found;
  }

  /** An interrupted input waits to be claimed again, in its original place. */
  requeue(inputId: string): InputRecord {
    const row = this.statements.requeue.get(idParams(inputId));
    if (row) return inputFromRow(row);
    throw this.refusal(inputId, "requeue", "interrupted");
  }

  /** Gives up on a waiting or interrupted input: completed, with `abandoned: reason` as outcome. */
  abandon(inputId: string, reason: string): InputRecord {
    const outcome: InputOutcome = {
      sessionId: null,
      eventIds: [],
      deliveryIds: [],
      abandoned: checkText("reason", reason, 4096),
    };
    const row = this.statements.abandon.get({
      ...idParams(inputId),
      now: this.clock(),
      outcome: JSON.stringify(outcome),
    });
    if (row) return inputFromRow(row);
    throw this.refusal(inputId, "abandon", "accepted or interrupted");
  }

  get(inputId: string): InputRecord | undefined {
    const row = this.statements.byId.get(idParams(inputId));
    return row ? inputFromRow(row) : undefined;
  }

  /** Inputs in arrival order, by state and/or session key. */
  list(options: InputListOptions = {}): InputRecord[] {
    const {
      state,
      sessionKey,
      afterSeq = 0,
      limit,
    } = checkOptions(options, ["state", "sessionKey", "afterSeq", "limit"], "list");
    if (state !== undefined && !INPUT_STATES.includes(state)) {
      throw new StateError("E_INVALID_ARGUMENT", `unknown input state ${String(state)}`);
    }
    const params = {
      state: state ?? null,
      sessionKey: sessionKey === undefined ? null : checkKey(sessionKey),
      after: checkInteger("afterSeq", afterSeq, 0, Number.MAX_SAFE_INTEGER),
      limit: checkLimit(limit),
    };
    return this.lists[listStatement(state, sessionKey !== undefined)].all(params).map(inputFromRow);
  }

  /**
   * `list` as `recover` would leave it, writing nothing: a claimed input whose lease lapsed and
   * whose owner process is dead reads as `interrupted` (its `storedState` stays `claimed`).
   */
  listAsRecovered(options: InputListOptions = {}): InputView[] {
    return viewInputs(
      (o) => this.list(o),
      options,
      (record) => this.orphaned(record),
    );
  }

  private orphaned(record: InputRecord): boolean {
    const lease = record.state === "claimed" ? record.lease : null;
    return lease !== null && lease.expiresAt <= this.clock() && !this.ownerAlive(lease.process);
  }

  private acceptParams(sessionKey: string, input: NewInput) {
    const now = this.clock();
    return {
      inputId: input.inputId === undefined ? null : checkChosenId(input.inputId, MAX_ID),
      tag: randomBytes(6).toString("hex"),
      sessionKey,
      idempotencyKey: checkText("idempotency key", input.idempotencyKey, MAX_ID),
      payload: encodeJson("input payload", input.payload, MAX_INPUT_PAYLOAD_BYTES),
      channel: optionalText("channel", input.channel, MAX_ID),
      conversationId: optionalText("conversation id", input.conversationId, MAX_ID),
      receivedAt: input.receivedAt === undefined ? now : checkTime("receivedAt", input.receivedAt),
      now,
    };
  }

  private lease(claim: { owner: string; leaseMs: number }) {
    const { owner, leaseMs } = checkOptions(claim, ["owner", "leaseMs"], "accept claim");
    const now = this.clock();
    const until = now + checkInteger("leaseMs", leaseMs, 1, Number.MAX_SAFE_INTEGER - now);
    return { ...this.holder(owner), until };
  }

  private noLease() {
    return { owner: null, pid: null, started: null, until: null };
  }

  /** The insert of `accept`; a chosen id already taken is a conflict. */
  private insert(params: AcceptRow): AcceptResult {
    let row: InputRow | undefined;
    try {
      row = this.statements.insert.get(params);
    } catch (error) {
      if (!isStateError(error, "E_CONSTRAINT")) throw error;
      throw new StateError("E_CONFLICT", `input id ${params.inputId} is already taken`, {
        cause: error,
        details: { inputId: params.inputId },
      });
    }
    if (row) return { input: inputFromRow(row), duplicate: false };
    const first = this.statements.byKey.get(params.sessionKey, params.idempotencyKey);
    if (!first) throw new StateError("E_CONFLICT", "input vanished while being accepted");
    return { input: inputFromRow(first), duplicate: true };
  }

  private holder(owner: string) {
    return {
      owner: checkText("lease owner", owner, MAX_ID),
      pid: this.process.pid,
      started: this.process.started,
    };
  }

  /** Runs one of the statements guarded by the lease; a refusal names who holds the input. */
  private whileHeld(
    which: "extend" | "release" | "complete",
    inputId: string,
    owner: string,
    params: Record<string, string | number>,
  ): InputRecord {
    const id = idParams(inputId);
    const row = this.statements[which].get({ ...params, ...this.holder(owner), ...id });
    if (row) return inputFromRow(row);
    const current = this.statements.byId.get(id);
    if (!current) throw notFound(inputId);
    this.checkHeld(current, owner, which);
    throw new StateError("E_CONFLICT", `input ${inputId} changed during ${which}`);
  }

  private checkHeld(row: InputRow, owner: string, action: string): void {
    const held =
      row.state === "claimed" &&
      row.lease_owner === owner &&
      row.lease_owner_pid === this.process.pid &&
      row.lease_owner_started === this.process.started;
    if (held) return;
    const by =
      row.lease_owner === null
        ? ""
        : ` (last held by ${row.lease_owner}, pid ${row.lease_owner_pid})`;
    throw new StateError(
      "E_CONFLICT",
      `cannot ${action} input ${row.input_id}: it is ${row.state}${by}, not held by ${owner} in this process`,
      { details: { inputId: row.input_id, state: row.state, owner: row.lease_owner } },
    );
  }

  private refusal(inputId: string, action: string, wanted: string): StateError {
    const row = this.statements.byId.get(idParams(inputId));
    if (!row) return notFound(inputId);
    return new StateError(
      "E_CONFLICT",
      `cannot ${action} input ${inputId}: it is ${row.state}, not ${wanted}`,
      { details: { inputId, state: row.state } },
    );
  }

  private dangling(sessionId: string | null): DanglingToolCall[] {
    if (sessionId === null) return [];
    const events = Array.from(this.transcripts.events(sessionId), (stored) => stored.event);
    return danglingToolCalls(events, this.branches.leaf(sessionId));
  }
}

/** The `INPUT_LIST_SQL` statement whose index serves these filters. */
function listStatement(
  state: InputState | undefined,
  bySession: boolean,
): keyof typeof INPUT_LIST_SQL {
  if (state === undefined) return bySession ? "session" : "all";
  if (bySession) {
    if (state === "claimed") return "bothClaimed";
    return state === "completed" ? "both" : "bothOpen";
  }
  return state === "interrupted" ? "interrupted" : "state";
}

function prepareAll<K extends string>(
  db: Database,
  sql: Readonly<Record<K, string>>,
): { [P in K]: SqlStatement<InputRow> } {
  const out = {} as { [P in K]: SqlStatement<InputRow> };
  for (const name of Object.keys(sql) as K[]) out[name] = db.prepare<InputRow>(sql[name]);
  return out;
}
