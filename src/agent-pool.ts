import { processCheckpointer } from "./db/checkpointer.js";
import type { Database } from "./db/database.js";

export const DEFAULT_MAX_OPEN_AGENTS = 64;
/** Far above any useful pool: past it the process runs out of file descriptors anyway. */
export const MAX_MAX_OPEN_AGENTS = 100_000;
/**
 * Slots of the cap kept for evicted databases whose connections wait for the checkpointer thread
 * to hold their files (see `Database.beginClose`): their 3 descriptors, and the thread's own
 * connection to each, are open meanwhile, so two slots per close. At most `MAX_CLOSING` at a
 * time; past it an eviction closes on the caller. A pool smaller than `MIN_CAP_FOR_HANDOFF` keeps
 * every slot and closes on the caller.
 */
const MAX_CLOSING = 2;
const HANDOFF_RESERVE = 2 * MAX_CLOSING;
const MIN_CAP_FOR_HANDOFF = 8;
/** How soon a wait is looked at again when no use of the pool comes first. */
const CLOSING_POLL_MS = 2;

/** What the pool needs of an open agent. */
export interface PooledAgent {
  readonly agentId: string;
  readonly db: Database;
}

/** How the pool of open agent databases is doing; see `StateHome.agentPool`. */
export interface AgentPoolStats {
  /** The cap (`openStateHome({ maxOpenAgents })`). */
  maxOpenAgents: number;
  /** Agent databases open now. */
  open: number;
  /** Of those, held by at least one pin. */
  pinned: number;
  /** Opens since the home was opened (first opens and reopens after an eviction). */
  opened: number;
  /** Databases closed to stay under the cap. */
  evicted: number;
  /** Opens that went past the cap because every open agent was pinned or mid-transaction. */
  openedOverCap: number;
  /**
   * Evictions whose close was left to the checkpointer thread (SQLite's checkpoint at a file's
   * last close runs there, not on the caller).
   */
  closedOffThread: number;
}

interface Entry<T extends PooledAgent> {
  readonly agent: T;
  pins: number;
}

/**
 * The open agent databases of one home, least recently used first. Past the cap the least recently
 * used one that is neither pinned nor inside a transaction is closed; when none can be, the pool
 * grows past the cap instead of failing (an agent in use is never closed under its user).
 */
export class AgentPool<T extends PooledAgent> {
  // A Map iterates in insertion order: re-inserting on use keeps it ordered by recency.
  private readonly entries = new Map<string, Entry<T>>();
  /** Every agent opened since the home was, so a reopen can skip what the first open did. */
  private readonly everOpened = new Set<string>();
  private opened = 0;
  private evicted = 0;
  private openedOverCap = 0;
  private closedOffThread = 0;
  /** Evicted, refused to callers, their connections closing once the thread holds their files. */
  private readonly closing: { agentId: string; db: Database }[] = [];
  /** Agents open at most: the cap, less the slots kept for a close handed to the thread. */
  private readonly liveCap: number;
  private closingTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly maxOpen: number,
    private readonly evictionReason: (agentId: string) => string,
  ) {
    this.liveCap = maxOpen >= MIN_CAP_FOR_HANDOFF ? maxOpen - HANDOFF_RESERVE : maxOpen;
  }

  /** The open agent, now the most recently used; undefined when it is not open. */
  use(agentId: string): T | undefined {
    const entry = this.entries.get(agentId);
    if (entry === undefined) return undefined;
    this.entries.delete(agentId);
    this.entries.set(agentId, entry);
    return entry.agent;
  }

  /** The open agent, left where it is in the recency order; undefined when it is not open. */
  peek(agentId: string): T | undefined {
    return this.entries.get(agentId)?.agent;
  }

  /** True when the agent was open before (and was closed since, or is open now). */
  openedBefore(agentId: string): boolean {
    return this.everOpened.has(agentId);
  }

  /** Adds a just-opened agent, closing others to make room. */
  add(agent: T): void {
    this.entries.set(agent.agentId, { agent, pins: 0 });
    this.everOpened.add(agent.agentId);
    this.opened++;
    this.trim(agent.agentId);
    if (this.entries.size > this.maxOpen) this.openedOverCap++;
  }

  /** Holds an open agent against eviction; the returned function lets go (once). */
  pin(agentId: string): () => void {
    const entry = this.entries.get(agentId);
    if (entry === undefined) throw new TypeError(`Expected an open agent to pin: ${agentId}`);
    entry.pins++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.pins--;
      if (entry.pins === 0) this.trim();
    };
  }

  /** The open agents, least recently used first. */
  values(): T[] {
    return [...this.entries.values()].map((entry) => entry.agent);
  }

  stats(): AgentPoolStats {
    let pinned = 0;
    for (const entry of this.entries.values()) if (entry.pins > 0) pinned++;
    return {
      maxOpenAgents: this.maxOpen,
      open: this.entries.size,
      pinned,
      opened: this.opened,
      evicted: this.evicted,
      openedOverCap: this.openedOverCap,
      closedOffThread: this.closedOffThread,
    };
  }

  /**
   * Closes one agent's database, pinned or not; its next use opens it again. On return no thread
   * of the process holds its file: the caller may replace it.
   */
  close(agentId: string, reason: string): void {
    const entry = this.entries.get(agentId);
    this.entries.delete(agentId);
    entry?.agent.db.close(reason);
    this.settleClosing();
  }

  /** Closes every agent database, pinned or not (the home is closing). */
  closeAll(): void {
    for (const [agentId, entry] of this.entries) {
      entry.agent.db.close(`agent "${agentId}" is closed: its home was closed`);
    }
    this.entries.clear();
    this.settleClosing();
  }

  /** Every closing connection closed, and the checkpointer done with their files. */
  private settleClosing(): void {
    for (const { db } of this.closing.splice(0)) db.close();
    clearTimeout(this.closingTimer);
    this.closingTimer = undefined;
    processCheckpointer().barrier();
  }

  /** Closes the connections whose files the thread holds now; looks again soon for the others. */
  private sweepClosing(): void {
    let kept = 0;
    for (const closing of this.closing) {
      if (closing.db.closeIfHandedOff()) this.closedOffThread++;
      else this.closing[kept++] = closing;
    }
    this.closing.length = kept;
    if (this.closing.length === 0 || this.closingTimer !== undefined) return;
    this.closingTimer = setTimeout(() => {
      this.closingTimer = undefined;
      this.sweepClosing();
    }, CLOSING_POLL_MS).unref();
  }

  /**
   * Closes least recently used agents until the open ones fit the cap. The cap is a descriptor
   * budget of 3 per agent (the database, its -wal and -shm): an agent the background
   * checkpointer has served holds a fourth until it closes, one whose cold index is open another
   * (`companionDescriptors`), so every 3 of those count as one more agent.
   */
  private trim(keep?: string): void {
    if (this.closing.length > 0) this.sweepClosing();
    const extraOf = (db: Database) => (db.checkpointerServed ? 1 : 0) + db.companionDescriptors;
    let extra = 0;
    for (const entry of this.entries.values()) extra += extraOf(entry.agent.db);
    const fits = () => this.entries.size + Math.ceil(extra / 3) <= this.liveCap;
    if (fits()) return;
    for (const [agentId, entry] of this.entries) {
      if (fits()) break;
      // A transaction in progress means a caller is inside it, pinned or not.
      if (agentId === keep || entry.pins > 0 || entry.agent.db.inTransaction) continue;
      extra -= extraOf(entry.agent.db);
      this.entries.delete(agentId);
      this.evict(agentId, entry.agent.db);
    }
    if (this.closing.length > 0) this.sweepClosing();
  }

  private evict(agentId: string, db: Database): void {
    const reason = this.evictionReason(agentId);
    this.evicted++;
    if (this.liveCap === this.maxOpen || this.closing.length >= MAX_CLOSING) db.close(reason);
    else if (db.beginClose(reason)) this.closing.push({ agentId, db });
  }

  /**
   * Closes the agent's connection now if the pool is closing it: its database is about to open
   * again, and a second connection next to one on its way out would share its file's locks.
   */
  finishClosing(agentId: string): void {
    const at = this.closing.findIndex((closing) => closing.agentId === agentId);
    if (at === -1) return;
    const [closing] = this.closing.splice(at, 1);
    closing?.db.close();
  }
}

/**
 * `run()`'s result, with `release` called once it is done: at once for a value or a throw, when
 * the promise settles for a promise.
 */
export function releasedAfter<R>(run: () => R, release: () => void): R {
  let result: R;
  try {
    result = run();
  } catch (error) {
    release();
    throw error;
  }
  if (!isPromiseLike(result)) {
    release();
    return result;
  }
  return result.then(
    (value) => {
      release();
      return value;
    },
    (error: unknown) => {
      release();
      throw error;
    },
  ) as R;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

export function checkMaxOpenAgents(value: unknown): number {
  if (
    typeof value !== "number" ||
    !Number.isInteger(value) ||
    value < 1 ||
    value > MAX_MAX_OPEN_AGENTS
  ) {
    throw new TypeError(
      `Expected maxOpenAgents to be an integer from 1 to ${MAX_MAX_OPEN_AGENTS}, got ${String(value)}`,
    );
  }
  return value;
}

/** The `E_CLOSED` message of a use of an agent the pool closed. */
export function evictedMessage(agentId: string, maxOpenAgents: number): string {
  return (
    `agent "${agentId}" was closed to keep at most ${maxOpenAgents} agent databases open ` +
    `(maxOpenAgents); a state from home.agent() is valid only until other agents are opened: ` +
    `hold it with home.withAgent("${agentId}", fn) or home.pinAgent("${agentId}")`
  );
}
