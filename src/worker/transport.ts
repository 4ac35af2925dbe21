import { type ChildProcess, fork } from "node:child_process";
import { type ResourceLimits, Worker } from "node:worker_threads";
import type { FromWorker, ToWorker } from "./protocol.js";
import type { RunFailure } from "./run-events.js";

/** How a worker died, as the run's failure. */
export type WorkerDeath = RunFailure & { kind: "exit" | "uncaught" | "out-of-memory" };

export interface TransportListener {
  message(message: FromWorker): void;
  exit(death: WorkerDeath): void;
}

/** One worker thread or forked process, seen from the parent. */
export interface WorkerTransport {
  readonly mode: "thread" | "process";
  readonly alive: boolean;
  send(message: ToWorker): void;
  /** Returns the function that removes the listener. */
  listen(listener: TransportListener): () => void;
  /** Keeps the parent's event loop alive while a run is in flight, and only then. */
  setBusy(busy: boolean): void;
  kill(): Promise<void>;
}

const STDERR_TAIL = 8 * 1024;

class Listeners {
  private readonly set = new Set<TransportListener>();
  add(listener: TransportListener): () => void {
    this.set.add(listener);
    return () => this.set.delete(listener);
  }
  message(message: FromWorker): void {
    for (const listener of this.set) listener.message(message);
  }
  exit(death: WorkerDeath): void {
    for (const listener of this.set) listener.exit(death);
  }
}

export function startThread(entry: string, resourceLimits?: ResourceLimits): WorkerTransport {
  const worker = new Worker(entry, resourceLimits ? { resourceLimits } : {});
  const listeners = new Listeners();
  let alive = true;
  let error: (Error & { code?: string }) | null = null;
  worker.on("message", (message: FromWorker) => listeners.message(message));
  worker.on("error", (e: Error) => {
    error = e;
  });
  worker.on("exit", (exitCode) => {
    alive = false;
    const failure = error as (Error & { code?: string }) | null;
    if (failure?.code === "ERR_WORKER_OUT_OF_MEMORY") {
      listeners.exit({ kind: "out-of-memory", message: failure.message, code: failure.code });
    } else if (failure) {
      listeners.exit({
        kind: "uncaught",
        message: failure.message,
        ...(failure.code ? { code: failure.code } : {}),
      });
    } else {
      listeners.exit({
        kind: "exit",
        message: `the worker thread exited with code ${exitCode}`,
        exitCode,
      });
    }
  });
  worker.unref();
  return {
    mode: "thread",
    get alive() {
      return alive;
    },
    send: (message) => worker.postMessage(message),
    listen: (listener) => listeners.add(listener),
    setBusy: (busy) => (busy ? worker.ref() : worker.unref()),
    kill: async () => {
      alive = false;
      await worker.terminate();
    },
  };
}

function processDeath(
  code: number | null,
  signal: NodeJS.Signals | null,
  crash: string | null,
  stderr: string,
): WorkerDeath {
  if (/heap out of memory|Allocation failed/i.test(stderr)) {
    return { kind: "out-of-memory", message: "the run process ran out of memory" };
  }
  if (crash !== null)
    return { kind: "uncaught", message: crash, ...(code === null ? {} : { exitCode: code }) };
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  return {
    kind: "exit",
    message: `the run process ${how}`,
    ...(code === null ? {} : { exitCode: code }),
  };
}

export function startProcess(
  entry: string,
  execArgv: string[],
  env: NodeJS.ProcessEnv,
): WorkerTransport {
  const child: ChildProcess = fork(entry, [], {
    execArgv,
    env,
    serialization: "advanced",
    stdio: ["ignore", "inherit", "pipe", "ipc"],
  });
  const listeners = new Listeners();
  let alive = true;
  let crash: string | null = null;
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
  });
  child.on("message", (message: FromWorker) => {
    if (message.type === "crash") crash = message.message;
    else listeners.message(message);
  });
  child.on("error", (error) => {
    crash ??= error.message;
  });
  child.on("exit", (code, signal) => {
    alive = false;
    listeners.exit(processDeath(code, signal, crash, stderr));
  });
  return {
    mode: "process",
    get alive() {
      return alive;
    },
    send: (message) => {
      if (child.connected) child.send(message);
    },
    listen: (listener) => listeners.add(listener),
    setBusy: () => {},
    // Disconnecting lets the process close its databases and exit; one that does not within a
    // second (a runaway backend) is killed.
    kill: () =>
      new Promise((resolve) => {
        if (!alive) return resolve();
        const force = setTimeout(() => child.kill("SIGKILL"), 1000);
        child.once("exit", () => {
          clearTimeout(force);
          resolve();
        });
        if (child.connected) child.disconnect();
      }),
  };
}
