import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ResourceLimits } from "node:worker_threads";
import { DRIVER_ENV } from "../db/driver-choice.js";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { openStateHome, resolveHomePath, StateHome } from "../home.js";
import type { AgentRuntimeBackend } from "./backend.js";
import { cancelledOutcome } from "./cancel.js";
import { type Dispatched, dispatchRun } from "./dispatch.js";
import { executeTurn, type TurnOutcome } from "./execute-turn.js";
import { loadBackend } from "./load-backend.js";
import { permissionFlags, permissionGrants } from "./permission.js";
import { WorkerPool } from "./pool.js";
import { type AgentTurnParams, type PreparedAgentRun, prepareAgentRun } from "./prepared-run.js";
import { RunControl } from "./run-control.js";
import { RunEventBus } from "./run-event-bus.js";
import type { ExecutionMode, RunBlocker, RunResult } from "./run-events.js";
import { RunRows } from "./run-rows.js";
import { SessionLanes } from "./session-lanes.js";
import { startProcess, type WorkerTransport } from "./transport.js";

export const WORKER_MODES = ["inline", "auto", "worker"] as const;
/**
 * `inline`: every turn in the caller's thread. `worker`: every turn in a worker, and a turn that
 * cannot cross fails closed. `auto` (default): a worker when the turn can cross, else inline.
 */
export type WorkerMode = (typeof WORKER_MODES)[number];

export interface AgentRuntimeOptions {
  /** The home: a path (the runtime opens its own connection) or an open StateHome. */
  home: string | StateHome;
  /** Default: `$AGENTSTATE_WORKER_MODE`, else `auto`. */
  mode?: WorkerMode;
  /** Worker threads at most (default: the machine's parallelism, 1 to 4). */
  poolSize?: number;
  /** V8 limits for each worker thread. */
  resourceLimits?: ResourceLimits;
  /** How long a cancelled worker gets to stop before it is terminated (default 2,000 ms). */
  cancelGraceMs?: number;
  /** The built worker-entry.js / process-entry.js (default: beside this module). */
  workerEntry?: string | URL;
  processEntry?: string | URL;
  /** Environment for the mode variable and forked run processes (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

const OPTION_KEYS = new Set([
  "home",
  "mode",
  "poolSize",
  "resourceLimits",
  "cancelGraceMs",
  "workerEntry",
  "processEntry",
  "env",
]);

/** The mode an explicit option or `AGENTSTATE_WORKER_MODE` names; `auto` when neither does. */
export function resolveWorkerMode(
  explicit?: string,
  env: NodeJS.ProcessEnv = process.env,
): WorkerMode {
  const chosen = explicit ?? (env.AGENTSTATE_WORKER_MODE || "auto");
  if (!(WORKER_MODES as readonly string[]).includes(chosen)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `worker mode must be inline, auto or worker, got ${JSON.stringify(chosen)}${explicit === undefined ? " (from AGENTSTATE_WORKER_MODE)" : ""}`,
    );
  }
  return chosen as WorkerMode;
}

function entryPath(given: string | URL | undefined, name: string): string | null {
  const path =
    given === undefined
      ? fileURLToPath(new URL(`./${name}`, import.meta.url))
      : given instanceof URL
        ? fileURLToPath(given)
        : given;
  return existsSync(path) ? path : null;
}

function checkOptions(options: AgentRuntimeOptions): void {
  rejectUnknownOptions(options, OPTION_KEYS, "createAgentRuntime");
  const { poolSize, cancelGraceMs } = options;
  if (poolSize !== undefined && (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > 256)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `poolSize must be an integer from 1 to 256, got ${poolSize}`,
    );
  }
  if (cancelGraceMs !== undefined && (!Number.isInteger(cancelGraceMs) || cancelGraceMs < 0)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `cancelGraceMs must be a non-negative integer, got ${cancelGraceMs}`,
    );
  }
}

// The permission model announces itself on every start; a run's stderr is for the run.
const QUIET = process.allowedNodeEnvironmentFlags.has("--disable-warning")
  ? ["--disable-warning=ExperimentalWarning"]
  : [];

/** Cancelled while it waited for its session or a worker: it never starts, nothing is stored. */
function notStarted(): TurnOutcome {
  const { status, failure } = cancelledOutcome(
    "aborted",
    "aborted by the caller before the run started",
  );
  return { status, text: "", usage: null, persisted: 0, failure };
}

interface Placement {
  where: ExecutionMode;
  /** Why an `auto` turn stays inline. */
  reasons: RunBlocker[];
}

/**
 * Runs agent turns: inline, in a pool of worker threads, or (for a permission-enforced turn) in
 * a forked process per turn. Turns on different sessions run in parallel up to the pool size;
 * turns on one session key run one after the other. `run` never rejects for how a turn ended —
 * timeouts, aborts and crashed workers are results — only for input it refuses up front.
 */
export class AgentRuntime {
  readonly mode: WorkerMode;
  readonly homePath: string;
  private readonly pool: WorkerPool | null;
  private readonly lanes = new SessionLanes();
  private readonly workerEntry: string | null;
  private readonly processEntry: string | null;
  private readonly cancelGraceMs: number;
  private readonly env: NodeJS.ProcessEnv;
  private ownHome: StateHome | null = null;
  private closed = false;

  constructor(private readonly options: AgentRuntimeOptions) {
    checkOptions(options);
    this.env = options.env ?? process.env;
    this.mode = resolveWorkerMode(options.mode, this.env);
    this.homePath =
      options.home instanceof StateHome ? options.home.path : resolveHomePath(options.home);
    this.workerEntry = entryPath(options.workerEntry, "worker-entry.js");
    this.processEntry = entryPath(options.processEntry, "process-entry.js");
    this.cancelGraceMs = options.cancelGraceMs ?? 2000;
    const size = options.poolSize ?? Math.max(1, Math.min(4, availableParallelism()));
    this.pool =
      this.workerEntry === null || this.mode === "inline"
        ? null
        : new WorkerPool({
            size,
            entry: this.workerEntry,
            ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
          });
  }

  /** Runs one turn; resolves when it has ended and the event handler has seen every event. */
  async run(params: AgentTurnParams): Promise<RunResult> {
    if (this.closed) throw new TypeError("Expected an open AgentRuntime; it was closed");
    const prepared = prepareAgentRun(params, this.homePath, {
      resolveSessionId: (sessionKey) => this.activeSessionId(params.agentId, sessionKey),
    });
    const placement = this.place(prepared.run, prepared.blockers);
    // Registers a new agent here, so the worker can open it without creating anything.
    this.home().agent(prepared.run.agentId);
    const key = `${prepared.run.agentId}\u0000${prepared.run.session.sessionKey}`;
    return this.lanes.run(key, () =>
      this.execute(prepared.run, placement, params, prepared.liveBackend),
    );
  }

  /** Stops the worker threads and closes the runtime's own connection. */
  async close(): Promise<void> {
    this.closed = true;
    await this.pool?.close();
    this.ownHome?.close();
    this.ownHome = null;
  }

  private home(): StateHome {
    if (this.options.home instanceof StateHome) return this.options.home;
    this.ownHome ??= openStateHome({ home: this.homePath });
    return this.ownHome;
  }

  private activeSessionId(agentId: string, sessionKey: string): string {
    const { lifecycle } = this.home().agent(agentId);
    // A plain read first: only a key without an active session needs the write lock.
    return (lifecycle.active(sessionKey) ?? lifecycle.ensure(sessionKey)).sessionId;
  }

  private place(run: PreparedAgentRun, blockers: RunBlocker[]): Placement {
    const enforce = run.permission.mode === "enforce";
    if (!enforce && this.mode === "inline") return { where: "inline", reasons: [] };
    const reasons = [...blockers];
    const entry = enforce ? this.processEntry : this.workerEntry;
    if (entry === null) {
      const file = enforce ? "process-entry.js" : "worker-entry.js";
      reasons.push({
        path: "workerEntry",
        reason: `missing (no built ${file} beside the runtime)`,
      });
    }
    if (enforce && this.mode === "inline") {
      reasons.push({
        path: "permission.mode",
        reason: `"enforce", which needs a process, not inline`,
      });
    }
    if (reasons.length === 0) return { where: enforce ? "process" : "thread", reasons };
    if (this.mode === "auto" && !enforce) return { where: "inline", reasons };
    // Fail closed: running inline instead would drop the isolation or the seatbelt asked for.
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `run ${run.runId} cannot run ${enforce ? "under the permission seatbelt" : "in a worker"}: ${reasons.map((b) => `${b.path} is ${b.reason}`).join("; ")}`,
      { details: { runId: run.runId, blockers: reasons } },
    );
  }

  private async execute(
    run: PreparedAgentRun,
    placement: Placement,
    params: AgentTurnParams,
    liveBackend: AgentRuntimeBackend | null,
  ): Promise<RunResult> {
    const bus = new RunEventBus(params.onEvent);
    let outcome: TurnOutcome;
    if (params.signal?.aborted) {
      // Cancelled while it waited for its session or a worker: it never starts.
      const { status, failure } = cancelledOutcome(
        "aborted",
        "aborted by the caller before the run started",
      );
      outcome = { status, text: "", usage: null, persisted: 0, failure };
    } else if (placement.where === "inline") {
      outcome = await this.runInline(run, bus, params.signal, liveBackend);
    } else if (placement.where === "thread") {
      outcome = await this.runInThread(run, bus, params.signal);
    } else {
      outcome = await this.runInProcess(run, bus, params.signal);
    }
    bus.close(run.runId, outcome, placement.where);
    await bus.drain();
    return {
      ...outcome,
      runId: run.runId,
      agentId: run.agentId,
      sessionId: run.session.sessionId,
      sessionKey: run.session.sessionKey,
      mode: placement.where,
      blockers: placement.reasons,
    };
  }

  private async runInline(
    run: PreparedAgentRun,
    bus: RunEventBus,
    signal: AbortSignal | undefined,
    liveBackend: AgentRuntimeBackend | null,
  ): Promise<TurnOutcome> {
    const controller = new AbortController();
    const control = new RunControl(run.timeoutMs, signal, (cancel) => controller.abort(cancel));
    bus.onHandlerError = (error) =>
      control.cancel("handler", `a parent event handler threw: ${String(error)}`);
    try {
      // Pinned for the whole turn: the pool must not close the agent while the turn writes to it.
      return await this.home().withAgent(run.agentId, (agent) =>
        executeTurn(run, {
          agent,
          backend: liveBackend ?? (() => loadBackend(run.backend)),
          signal: controller.signal,
          mode: "inline",
          post: (event) => bus.push(event),
        }),
      );
    } finally {
      control.dispose();
    }
  }

  private async runInThread(
    run: PreparedAgentRun,
    bus: RunEventBus,
    signal: AbortSignal | undefined,
  ): Promise<TurnOutcome> {
    const pool = this.pool as WorkerPool;
    const transport = await pool.acquire();
    if (signal?.aborted) {
      pool.release(transport, true);
      return notStarted();
    }
    const dispatched = await this.dispatch(transport, run, bus, signal);
    pool.release(transport, dispatched.reusable);
    return dispatched.outcome;
  }

  private dispatch(
    transport: WorkerTransport,
    run: PreparedAgentRun,
    bus: RunEventBus,
    signal: AbortSignal | undefined,
  ): Promise<Dispatched> {
    // Pinned until the run's rows are read back: the pool must not close the agent meanwhile.
    return this.home().withAgent(run.agentId, (agent) => {
      // The session's tail now, before the worker can store anything: what lies past it is the run's.
      const rows = new RunRows(agent, run);
      return dispatchRun(transport, run, {
        bus,
        signal,
        cancelGraceMs: this.cancelGraceMs,
        readBack: () => rows.readBack(bus, transport.mode),
      });
    });
  }

  private async runInProcess(
    run: PreparedAgentRun,
    bus: RunEventBus,
    signal: AbortSignal | undefined,
  ): Promise<TurnOutcome> {
    // The run's own temp directory: granted to it, used by vfs-only exec projections, removed after.
    const tempDir = mkdtempSync(join(tmpdir(), "agentstate-run-"));
    try {
      const flags = [...permissionFlags(permissionGrants(run, tempDir)), ...QUIET];
      // The forked run opens the home on the engine this runtime's home uses.
      const env = { ...this.env, TMPDIR: tempDir, [DRIVER_ENV]: this.home().db.driverName };
      const transport = startProcess(this.processEntry as string, flags, env);
      try {
        return (await this.dispatch(transport, run, bus, signal)).outcome;
      } finally {
        await transport.kill();
      }
    } finally {
      rmSync(tempDir, { recursive: true, force: true });
    }
  }
}

/** A runtime over a home; `close()` it when done (idle worker threads do not keep Node alive). */
export function createAgentRuntime(options: AgentRuntimeOptions): AgentRuntime {
  return new AgentRuntime(options);
}
