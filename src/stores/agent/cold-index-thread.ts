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
import { STATE_ERROR_CODES, StateError, type StateErrorCode } from "../../db/errors.js";
import type { ColdRowsJob } from "./cold-index.js";

/** A job as the thread gets it: the rows, and the file they go to. */
export interface ColdIndexThreadJob extends ColdRowsJob {
  ticket: number;
  path: string;
  driver: DriverName;
}

/** The thread's answer to a job, sent before it marks the job done. */
export interface ColdIndexThreadAnswer {
  ticket: number;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

/** What the thread starts with: the words it marks its jobs in, and where it answers. */
export interface ColdIndexThreadData {
  /** [0]: the last ticket done; [1]: rows inserted by the job in hand. */
  words: SharedArrayBuffer;
  answers: MessagePort;
}

/** How long a job may go without inserting a row (its busy timeout is 30 s) before it is given up. */
const STALL_MS = 120_000;

/**
 * The process's cold index thread: writes the search rows of a session being moved cold into the
 * agent's cold index while the move encodes and writes the session's archive. Tokenizing the rows
 * takes about as long as deflating the archive (about 60 ms each for 4 MB of transcript), and the
 * two share nothing until the move's commit, which checks the rows are there. The move's API stays
 * synchronous: `wait` blocks until the thread marks the job done. One thread (unref'd: it never
 * keeps the process alive), started by the first move that has enough rows, on its own
 * connection per job (closed after it: the pool counts its agents' descriptors).
 */
export class ColdIndexThread {
  private readonly file = fileURLToPath(new URL("./cold-index-worker.js", import.meta.url));
  private readonly built = existsSync(this.file);
  private worker: Worker | null = null;
  private failed = false;
  private readonly words = new Int32Array(new SharedArrayBuffer(8));
  private readonly channel = new MessageChannel();
  private lastTicket = 0;
  private readonly answers = new Map<number, ColdIndexThreadAnswer>();

  /** False from the TypeScript sources, off the main thread, on one core, or after a failure. */
  get available(): boolean {
    return this.built && isMainThread && !this.failed && availableParallelism() > 1;
  }

  /** How many jobs the thread has been handed in this process (for `status`-like diagnostics). */
  get jobs(): number {
    return this.lastTicket;
  }

  /** Hands a job to the thread; its ticket for `wait`, or undefined when the caller must write. */
  post(job: ColdRowsJob & { path: string; driver: DriverName }): number | undefined {
    const worker = this.start();
    if (worker === null) return undefined;
    const ticket = ++this.lastTicket;
    worker.postMessage({ ...job, ticket } satisfies ColdIndexThreadJob);
    return ticket;
  }

  /** Blocks until the job of `ticket` is done; throws what it threw. */
  wait(ticket: number): void {
    let progress = -1;
    let movedAt = Date.now();
    while (Atomics.load(this.words, 0) < ticket) {
      const now = Date.now();
      const rows = Atomics.load(this.words, 1);
      if (rows !== progress) [progress, movedAt] = [rows, now];
      if (now - movedAt > STALL_MS || this.worker === null) {
        this.fail();
        throw new StateError("E_IO", "the cold index thread stopped answering", {
          details: { ticket },
        });
      }
      Atomics.wait(this.words, 0, Atomics.load(this.words, 0), 1000);
    }
    for (;;) {
      const received = receiveMessageOnPort(this.channel.port1);
      if (received === undefined) break;
      const answer = received.message as ColdIndexThreadAnswer;
      this.answers.set(answer.ticket, answer);
    }
    const answer = this.answers.get(ticket);
    // Answers of earlier tickets a failed move never waited for: nobody asks for them again.
    for (const done of this.answers.keys()) if (done <= ticket) this.answers.delete(done);
    if (answer?.error !== undefined) throw errorOf(answer.error);
  }

  private start(): Worker | null {
    if (this.worker !== null || !this.available) return this.worker;
    const data: ColdIndexThreadData = {
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
      this.fail(); // Some embedders forbid threads: moves then write their rows themselves.
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

function errorOf(error: NonNullable<ColdIndexThreadAnswer["error"]>): StateError {
  const known = (STATE_ERROR_CODES as readonly string[]).includes(error.code);
  const code = (known ? error.code : "E_SQLITE") as StateErrorCode;
  return new StateError(code, error.message, { details: error.details ?? {} });
}

let shared: ColdIndexThread | undefined;

/** The process's cold index thread (one per process). */
export function processColdIndexThread(): ColdIndexThread {
  shared ??= new ColdIndexThread();
  return shared;
}
