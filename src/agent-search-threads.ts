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
import { NEEDS_UPGRADE, readBare } from "./agent-reader.js";
import type { DriverName } from "./db/driver.js";
import { StateError, stateErrorFrom } from "./db/errors.js";
import type { JournalMode } from "./db/filesystem.js";
import type { SearchHit, SearchOptions } from "./stores/agent/transcript-search.js";

/** A search of many agents, each over a bare read-only connection of its own (see `readBare`). */
export interface BareSearchJob {
  items: readonly { agentId: string; path: string }[];
  query: string;
  options: SearchOptions;
  driver?: DriverName;
  journalMode?: JournalMode;
}

/**
 * One agent's search: its hits; or `upgrade`, a file an older release wrote, which only the
 * pool's writable open brings up to date; or the error it failed with.
 */
export type BareSearchOutcome = { hits: SearchHit[] } | { upgrade: true } | { error: unknown };

/** An outcome as a thread sends it: an error is sent as its parts and built again. */
export type SentOutcome =
  | { hits: SearchHit[] }
  | { upgrade: true }
  | { error: { name: string; code?: string; message: string; details?: Record<string, unknown> } };

/** Sent to a thread: the job, and where it claims agents (`[0]`) and counts those done (`[1]`). */
export interface SearchThreadCall {
  call: number;
  job: BareSearchJob;
  words: SharedArrayBuffer;
}

/** A thread's answer for the agent at `index` of call `call`. */
export type SearchThreadAnswer = SentOutcome & { call: number; index: number };

/**
 * Below this many agents a search is over in about 150 ms on one thread: a second thread's start
 * (it loads the stores) would gain little.
 */
const THREADS_FROM_AGENTS = 96;
/** Threads at most beside the caller's (which searches too). */
const MAX_THREADS = 3;
/** An agent's search waits at most 30 s for a lock (busy timeout); past this a thread is lost. */
const STALL_MS = 60_000;
/**
 * Threads a search started are stopped after this long without another: each holds a heap and
 * SQLite caches of its own (tens of MB), which a process that searches now and then need not keep.
 */
const IDLE_MS = 30_000;

/** Searches one agent of the job on this thread. */
export function searchOne(job: BareSearchJob, index: number): BareSearchOutcome {
  const item = job.items[index];
  if (item === undefined) throw new RangeError(`Expected an agent at index ${index}`);
  const options = {
    ...(job.driver ? { driver: job.driver } : {}),
    ...(job.journalMode ? { journalMode: job.journalMode } : {}),
  };
  try {
    const hits = readBare(item.path, item.agentId, options, (agent) =>
      agent.search.search(job.query, job.options),
    );
    return hits === NEEDS_UPGRADE ? { upgrade: true } : { hits };
  } catch (error) {
    return { error };
  }
}

/** An outcome in the form a thread can send. */
export function sendable(outcome: BareSearchOutcome): SentOutcome {
  if (!("error" in outcome)) return outcome;
  const error = outcome.error;
  if (error instanceof StateError) return { error: { name: error.name, ...error.toJSON() } };
  const { name, message } =
    error instanceof Error ? error : { name: "Error", message: String(error) };
  return { error: { name, message } };
}

function received(outcome: SentOutcome): BareSearchOutcome {
  if (!("error" in outcome)) return outcome;
  const { name, code, message, details } = outcome.error;
  if (code !== undefined) return { error: stateErrorFrom({ code, message, details }) };
  return { error: name === "TypeError" ? new TypeError(message) : new Error(message) };
}

interface SearchThread {
  worker: Worker;
  answers: MessagePort;
}

/**
 * The process's search threads: a search of many agents spreads them over these and the caller's
 * own thread, each agent's search on a bare connection that is closed before the next (the same
 * as one thread would do, agent by agent). The API stays synchronous: the caller searches agents
 * itself, then blocks (`Atomics.wait`) until the threads have done the rest. Threads start on the
 * first search that needs them and are kept until `IDLE_MS` pass without one (unref'd: they never
 * keep the process alive). No thread is used with one core, from the TypeScript sources or off
 * the main thread.
 */
export class SearchThreads {
  private readonly file = fileURLToPath(new URL("./agent-search-worker.js", import.meta.url));
  private readonly built = existsSync(this.file);
  private readonly threads: SearchThread[] = [];
  private failed = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private calls = 0;
  /** Agents searched on the threads, in this process (the caller's own share not counted). */
  searchedOnThreads = 0;

  private get available(): boolean {
    return this.built && isMainThread && !this.failed && availableParallelism() > 1;
  }

  /** Every agent of `job` searched, outcomes in the order of its items. */
  searchEach(job: BareSearchJob): BareSearchOutcome[] {
    const count = job.items.length;
    const outcomes: (BareSearchOutcome | undefined)[] = new Array(count);
    // A copy: giving a lost thread up empties the kept list, and the answers are read from these.
    const threads = count >= THREADS_FROM_AGENTS ? [...this.start()] : [];
    if (threads.length === 0) {
      for (let i = 0; i < count; i++) outcomes[i] = searchOne(job, i);
      return outcomes as BareSearchOutcome[];
    }
    const words = new Int32Array(new SharedArrayBuffer(8));
    const call = ++this.calls;
    for (const thread of threads) {
      thread.worker.postMessage({
        call,
        job,
        words: words.buffer as SharedArrayBuffer,
      } satisfies SearchThreadCall);
    }
    for (let i = Atomics.add(words, 0, 1); i < count; i = Atomics.add(words, 0, 1)) {
      outcomes[i] = searchOne(job, i);
      Atomics.add(words, 1, 1);
    }
    if (!this.waitForAll(words, count)) {
      // No thread claims an agent from now on; those a lost thread held are searched below.
      Atomics.store(words, 0, count);
      this.fail();
    }
    for (const thread of threads) {
      for (let got = receiveMessageOnPort(thread.answers); got; ) {
        const answer = got.message as SearchThreadAnswer;
        if (answer.call === call && outcomes[answer.index] === undefined) {
          outcomes[answer.index] = received(answer);
          this.searchedOnThreads++;
        }
        got = receiveMessageOnPort(thread.answers);
      }
    }
    for (let i = 0; i < count; i++) outcomes[i] ??= searchOne(job, i);
    this.stopWhenIdle();
    return outcomes as BareSearchOutcome[];
  }

  /** Threads running now (started by a search, stopped once idle). */
  get running(): number {
    return this.threads.length;
  }

  private stopWhenIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.stop(), IDLE_MS).unref();
  }

  /** Stops the threads; the next search that needs them starts them again. */
  private stop(): void {
    for (const { worker } of this.threads.splice(0)) {
      worker.removeAllListeners("exit");
      worker.removeAllListeners("error");
      void worker.terminate();
    }
  }

  /** Waits until `count` agents are done; false when none was done for `STALL_MS`. */
  private waitForAll(words: Int32Array, count: number): boolean {
    let seen = -1;
    let movedAt = Date.now();
    for (;;) {
      const done = Atomics.load(words, 1);
      if (done >= count) return true;
      const now = Date.now();
      if (done !== seen) [seen, movedAt] = [done, now];
      else if (now - movedAt > STALL_MS) return false;
      Atomics.wait(words, 1, done, 1000);
    }
  }

  private start(): SearchThread[] {
    if (!this.available) return [];
    const wanted = Math.min(MAX_THREADS, availableParallelism() - 1);
    try {
      while (this.threads.length < wanted) {
        const channel = new MessageChannel();
        const worker = new Worker(this.file, {
          workerData: { answers: channel.port2 },
          transferList: [channel.port2],
        });
        worker.unref();
        worker.on("error", () => this.fail());
        worker.on("exit", () => this.fail());
        this.threads.push({ worker, answers: channel.port1 });
      }
    } catch {
      this.fail(); // Some embedders forbid threads: searches then run on the caller's thread.
    }
    return this.threads;
  }

  private fail(): void {
    this.failed = true;
    clearTimeout(this.idleTimer);
    this.stop();
  }
}

let shared: SearchThreads | undefined;

/** The process's search threads (one set per process). */
export function processSearchThreads(): SearchThreads {
  shared ??= new SearchThreads();
  return shared;
}
