import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { isMainThread, Worker } from "node:worker_threads";
import {
  type CheckpointerData,
  GATE_CHECKPOINTING,
  GATE_HELD,
  type ToCheckpointer,
} from "./checkpointer-protocol.js";
import type { DriverName } from "./driver.js";

/** The thread's round: a PASSIVE checkpoint of each database written in the last `IDLE_MS`. */
const TICK_MS = 5;
/** A database quiet this long loses its checkpointer connection: a process holds thousands. */
const IDLE_MS = 3000;
/** The longest a close waits for the thread to let go of the file. */
const ACK_TIMEOUT_MS = 2000;

/**
 * The process's background checkpointer, seen from the main thread: one worker thread (unref'd,
 * so it never keeps the process alive), started on the first database that has written for more
 * than `ANNOUNCE_MS`; a short command that writes a few rows and closes never starts it. Other
 * threads (agent runs in worker threads) keep SQLite's own auto-checkpoint: one thread per process.
 */
export class Checkpointer {
  private readonly file = fileURLToPath(new URL("./checkpointer-worker.js", import.meta.url));
  private readonly built = existsSync(this.file);
  private worker: Worker | null = null;
  private failed = false;
  /** Writers of this thread holding the checkpointer's rounds off (see `whileHeld`). */
  private readonly holders = new Set<object>();
  private readonly ack = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;
  /** Open databases per path in this process: only the last close of a path drops it. */
  private readonly open = new Map<string, number>();
  /** Paths the thread may hold a connection to. */
  private readonly announced = new Set<string>();
  /** Paths handed to the thread (see `handOff`), by the `seq` of their `adopt`. */
  private readonly adopting = new Map<string, number>();
  /** Paths whose `release` the thread may not have done yet, by its `seq`. */
  private readonly releasing = new Map<string, number>();
  private readonly fallbacks = new Set<() => void>();

  /**
   * `gate`: the words shared with the thread (see CheckpointerData); a test passes its own to
   * play the thread's part.
   */
  constructor(private readonly gate = new Int32Array(new SharedArrayBuffer(8))) {}

  /** False from the TypeScript sources (no compiled thread), off the main thread, or after a failure. */
  get available(): boolean {
    return this.built && isMainThread && !this.failed;
  }

  /** Whether its thread is running now. */
  get running(): boolean {
    return this.worker !== null;
  }

  /** A database opened with auto-checkpoint off; `fallback` turns it back on if the thread dies. */
  attach(path: string, fallback: () => void): void {
    this.open.set(path, (this.open.get(path) ?? 0) + 1);
    this.fallbacks.add(fallback);
  }

  announce(path: string, driver: DriverName): void {
    const worker = this.start();
    if (worker === null) return;
    this.announced.add(path);
    worker.postMessage({ type: "active", path, driver } satisfies ToCheckpointer);
  }

  /**
   * A database is closing; call what this returns, if anything, once its connection is closed.
   * When it is the process's last one on `path`, the thread closes its connection first, and this
   * waits for that (bounded): SQLite deletes the -wal and -shm files only when the last connection
   * closes, and that must be the caller's. Unless the file was handed off (`handOff`): then the
   * caller's close comes first and is cheap, and the thread's, told after it, is the last.
   */
  detach(path: string, fallback: () => void): (() => void) | undefined {
    this.fallbacks.delete(fallback);
    const left = (this.open.get(path) ?? 1) - 1;
    if (left > 0) {
      this.open.set(path, left);
      return undefined;
    }
    this.open.delete(path);
    const worker = this.worker;
    const handedOff = this.adopting.delete(path);
    if (!this.announced.delete(path) && !handedOff) return undefined;
    if (worker === null) return undefined;
    if (handedOff) {
      return () => {
        const seq = ++this.seq;
        worker.postMessage({ type: "release", path, seq } satisfies ToCheckpointer);
        this.releasing.set(path, seq);
      };
    }
    const seq = ++this.seq;
    worker.postMessage({ type: "drop", path, seq } satisfies ToCheckpointer);
    if (!this.waitForAck(seq)) this.fail();
    return undefined;
  }

  /**
   * Asks the thread to hold a connection of its own to `path`, so that the caller's connection
   * (the process's last on it) can close without being the file's last: SQLite's checkpoint at
   * the last close (the WAL copied back, two fsyncs) then runs on the thread, after the caller's
   * close. Returns the ticket `adopted` answers for, or undefined when the caller's close should
   * simply go ahead (no thread here, or another connection of this process is open on the file).
   */
  handOff(path: string, driver: DriverName): number | undefined {
    if (this.open.get(path) !== 1) return undefined;
    const worker = this.start();
    if (worker === null) return undefined;
    const seq = ++this.seq;
    worker.postMessage({ type: "adopt", path, driver, seq } satisfies ToCheckpointer);
    this.adopting.set(path, seq);
    return seq;
  }

  /** Whether the thread holds the file of ticket `seq` (or is gone: the close goes ahead then). */
  adopted(seq: number): boolean {
    return this.worker === null || Atomics.load(this.ack, 0) >= seq;
  }

  /**
   * Call before touching `path` with anything but SQLite (a header read, a rename): waits
   * (bounded) while the thread may still hold the file after a `handOff`. Closing any descriptor
   * of a file drops every POSIX lock the process holds on it, the thread connection's included.
   * A connection handed off but not yet closed must be closed first (`AgentPool.finishClosing`).
   */
  settle(path: string): void {
    const seq = this.releasing.get(path) ?? this.adopting.get(path);
    if (seq === undefined) return;
    if (Atomics.load(this.ack, 0) < seq && this.worker !== null && !this.waitForAck(seq)) {
      this.fail();
    }
    if (this.releasing.get(path) === seq) this.releasing.delete(path);
  }

  /**
   * Waits (bounded) until the thread has done every message sent before: after it, the thread
   * holds no connection to a file this process has closed, so the file can be replaced.
   */
  barrier(): void {
    this.releasing.clear();
    if (this.worker === null) return;
    const seq = ++this.seq;
    this.worker.postMessage({ type: "barrier", seq } satisfies ToCheckpointer);
    if (!this.waitForAck(seq)) this.fail();
  }

  /**
   * Runs `fn` (a writer's own checkpoint) while the thread runs none: holds the thread's next
   * round and waits, at most `waitMs`, for the one in progress. Returns undefined when that one
   * did not end in time; the hold then stays raised, so the thread starts no new round and the
   * caller's next try (its WalSignal retries within ANNOUNCE_MS) gets in. Let go and retried at
   * once, a catch-up could lose to the thread's next round every time on a busy machine, while
   * the WAL grew past any bound (a bench run saw 283 MB and then a 1 s catch-up).
   */
  whileHeld<T>(owner: object, waitMs: number, fn: () => T): T | undefined {
    this.hold(owner);
    if (Atomics.load(this.gate, GATE_CHECKPOINTING) === 1) {
      try {
        Atomics.wait(this.gate, GATE_CHECKPOINTING, 1, waitMs);
      } catch {
        this.letGo(owner);
        return undefined; // This thread may not block: leave the catch-up to the thread.
      }
      if (Atomics.load(this.gate, GATE_CHECKPOINTING) === 1) return undefined;
    }
    try {
      return fn();
    } finally {
      this.letGo(owner);
    }
  }

  /** Drops `owner`'s hold, if a deferred catch-up left it raised (it ran, or is not needed now). */
  letGo(owner: object): void {
    if (this.holders.delete(owner) && this.holders.size === 0) Atomics.sub(this.gate, GATE_HELD, 1);
  }

  private hold(owner: object): void {
    if (this.holders.has(owner)) return;
    this.holders.add(owner);
    if (this.holders.size === 1) Atomics.add(this.gate, GATE_HELD, 1);
  }

  private waitForAck(seq: number): boolean {
    const deadline = Date.now() + ACK_TIMEOUT_MS;
    for (;;) {
      const done = Atomics.load(this.ack, 0);
      if (done >= seq) return true;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      try {
        Atomics.wait(this.ack, 0, done, remaining);
      } catch {
        return true; // A runtime that forbids blocking this thread: close without the handshake.
      }
    }
  }

  private start(): Worker | null {
    if (this.worker !== null || !this.available) return this.worker;
    const data: CheckpointerData = {
      ack: this.ack.buffer as SharedArrayBuffer,
      gate: this.gate.buffer as SharedArrayBuffer,
      tickMs: TICK_MS,
      idleMs: IDLE_MS,
    };
    try {
      const worker = new Worker(this.file, { workerData: data });
      worker.unref();
      worker.on("error", () => this.fail());
      worker.on("exit", () => this.fail());
      this.worker = worker;
    } catch {
      this.fail(); // Some embedders forbid threads: SQLite's own auto-checkpoint then serves.
    }
    return this.worker;
  }

  /** The thread cannot serve: every database it served goes back to SQLite's auto-checkpoint. */
  private fail(): void {
    if (this.failed) return;
    this.failed = true;
    const worker = this.worker;
    this.worker = null;
    void worker?.terminate();
    this.announced.clear();
    this.adopting.clear();
    this.releasing.clear();
    for (const fallback of this.fallbacks) fallback();
    this.fallbacks.clear();
  }
}

let shared: Checkpointer | undefined;

/** The process's checkpointer (one per process). */
export function processCheckpointer(): Checkpointer {
  shared ??= new Checkpointer();
  return shared;
}
