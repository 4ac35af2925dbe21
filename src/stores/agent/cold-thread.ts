import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import {
  isMainThread,
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";
import type { DriverName } from "../../db/driver.js";
import { StateError, stateErrorFrom } from "../../db/errors.js";
import type { ArchiveMember, InflatedMembers } from "../../transcript/cold-archive.js";
import type { ColdRowsJob } from "./cold-index-rows.js";

/** Work the thread does: a session's search rows into a cold index, or one archive member inflated. */
export type ColdThreadWork =
  | (ColdRowsJob & { kind: "index"; path: string; driver: DriverName })
  | { kind: "inflate"; path: string; member: number; offset: number; length: number };

/** A job as the thread gets it. */
export type ColdThreadJob = ColdThreadWork & { ticket: number };

/** The thread's answer to a job, sent before it marks the job done. */
export interface ColdThreadAnswer {
  ticket: number;
  /** An inflated member's bytes (moved, not copied, to the waiting thread). */
  data?: Uint8Array;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

/** What the thread starts with: the words it marks its jobs in, and where it answers. */
export interface ColdThreadData {
  /** [0]: the last ticket done; [1]: rows inserted by the job in hand. */
  words: SharedArrayBuffer;
  answers: MessagePort;
}

/** How long a job may go without progress (its busy timeout is 30 s) before it is given up. */
const STALL_MS = 120_000;

/**
 * The process's cold storage thread, for the work of a move or a restore that can run beside the
 * rest of it. A move hands it the session's search rows to write into the cold index while it
 * encodes and writes the archive: tokenizing them takes about as long as deflating the archive
 * (about 60 ms each for 4 MB of transcript), and the two share nothing until the move's commit,
 * which checks the rows are there. A restore hands it the archive's members to inflate while it
 * inserts the rows of the ones before: inflating takes about as long as the inserts. The stores'
 * APIs stay synchronous: `wait` blocks until the thread marks the job done. One thread (unref'd:
 * it never keeps the process alive), started by the first job, on its own connection per index
 * job (closed after it: the pool counts its agents' descriptors).
 */
export class ColdThread {
  private readonly file = fileURLToPath(new URL("./cold-thread-worker.js", import.meta.url));
  private readonly built = existsSync(this.file);
  private worker: Worker | null = null;
  private failed = false;
  private readonly words = new Int32Array(new SharedArrayBuffer(8));
  private readonly channel = new MessageChannel();
  private lastTicket = 0;
  private readonly answers = new Map<number, ColdThreadAnswer>();

  /** False from the TypeScript sources, off the main thread, on one core, or after a failure. */
  get available(): boolean {
    return this.built && isMainThread && !this.failed && availableParallelism() > 1;
  }

  /** How many jobs the thread has been handed in this process. */
  get jobs(): number {
    return this.lastTicket;
  }

  /** Hands work to the thread; its ticket for `wait`, or undefined when the caller must do it. */
  post(work: ColdThreadWork): number | undefined {
    const worker = this.start();
    if (worker === null) return undefined;
    const ticket = ++this.lastTicket;
    worker.postMessage({ ...work, ticket } satisfies ColdThreadJob);
    return ticket;
  }

  /**
   * Blocks until the job of `ticket` is done; returns its data, throws what it threw. Answers of
   * earlier tickets nobody waited for (a move or restore that failed before) are dropped then.
   */
  wait(ticket: number): Uint8Array | undefined {
    let progress = -1;
    let movedAt = Date.now();
    for (;;) {
      const done = Atomics.load(this.words, 0);
      if (done >= ticket) break;
      const now = Date.now();
      const rows = Atomics.load(this.words, 1);
      if (rows !== progress) [progress, movedAt] = [rows, now];
      if (now - movedAt > STALL_MS || this.worker === null) {
        this.fail();
        throw new StateError("E_IO", "the cold storage thread stopped answering", {
          details: { ticket },
        });
      }
      Atomics.wait(this.words, 0, done, 1000);
    }
    for (;;) {
      const received = receiveMessageOnPort(this.channel.port1);
      if (received === undefined) break;
      const answer = received.message as ColdThreadAnswer;
      this.answers.set(answer.ticket, answer);
    }
    const answer = this.answers.get(ticket);
    for (const old of this.answers.keys()) if (old <= ticket) this.answers.delete(old);
    if (answer?.error !== undefined) throw stateErrorFrom(answer.error);
    return answer?.data;
  }

  private start(): Worker | null {
    if (this.worker !== null || !this.available) return this.worker;
    const data: ColdThreadData = {
      words: this.words.buffer as SharedArrayBuffer,
      answers: this.channel.port2,
    };
    try {
      const worker = new Worker(this.file, { workerData: data, transferList: [data.answers] });
      worker.unref();
      worker.on("error", () => this.fail());
      worker.on("exit", () => this.fail());
      this.worker = worker;
    } catch {
      this.fail(); // Some embedders forbid threads: moves and restores then do it all themselves.
    }
    return this.worker;
  }

  private fail(): void {
    this.failed = true;
    const worker = this.worker;
    this.worker = null;
    void worker?.terminate();
  }
}

/**
 * Members inflated ahead of the one being read: enough to keep the thread busy while the caller
 * inserts, few enough that a huge archive never sits in memory inflated whole (1 MiB each).
 */
const INFLATE_AHEAD = 4;

/**
 * The members of an archive inflated on the thread, in order, each asked for `INFLATE_AHEAD`
 * members before it is read; undefined when the thread does not serve or there is one member only
 * (nothing to overlap). Members must be taken in order; one the thread could not take is left to
 * the reader. Answers nobody took (a restore that
 * failed) are dropped with the thread's next answers.
 */
export function inflateAhead(
  path: string,
  members: readonly ArchiveMember[],
): InflatedMembers | undefined {
  const thread = processColdThread();
  if (members.length < 2 || !thread.available) return undefined;
  const tickets: (number | undefined)[] = [];
  const ask = (member: number): void => {
    const m = members[member];
    if (m === undefined || member in tickets) return;
    const work = { kind: "inflate", path, member, offset: m.offset, length: m.length } as const;
    tickets[member] = thread.post(work);
  };
  for (let member = 0; member < INFLATE_AHEAD; member++) ask(member);
  return (member) => {
    ask(member + INFLATE_AHEAD);
    const ticket = tickets[member];
    if (ticket === undefined) return undefined; // The thread stopped serving: the reader inflates it.
    const data = thread.wait(ticket) as Uint8Array;
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  };
}

let shared: ColdThread | undefined;

/** The process's cold storage thread (one per process). */
export function processColdThread(): ColdThread {
  shared ??= new ColdThread();
  return shared;
}
