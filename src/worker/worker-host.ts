import { isStateError } from "../db/errors.js";
import { openStateHome, type StateHome } from "../home.js";
import { RunCancelled } from "./cancel.js";
import { executeTurn, type TurnOutcome } from "./execute-turn.js";
import { loadBackend } from "./load-backend.js";
import type { PreparedAgentRun } from "./prepared-run.js";
import type { FromWorker, ToWorker } from "./protocol.js";
import type { ExecutionMode, RunEvent } from "./run-events.js";

/** A structured clone arrives unfrozen; the backend must not be able to rewrite its own run. */
function deepFreeze<T>(value: T): T {
  // Typed arrays cannot be frozen; their bytes are the caller's data, not the run's shape.
  if (
    typeof value === "object" &&
    value !== null &&
    !Object.isFrozen(value) &&
    !ArrayBuffer.isView(value)
  ) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

export interface HostPort {
  post(message: FromWorker): void;
  onMessage(handler: (message: ToWorker) => void): void;
}

/**
 * The worker side: runs the turns it is sent, each on connections this thread or process opened
 * itself from the run's home path (kept open for the next turn), and turns a cancel message into
 * a local AbortSignal.
 */
export function serveTurns(port: HostPort, mode: ExecutionMode): void {
  const homes = new Map<string, StateHome>();
  const active = new Map<string, AbortController>();
  // One message per event would cost a structured clone and a wake-up each: stream chunks, which
  // come in bursts, travel together once per event-loop pass. Every other event leaves at once,
  // behind the chunks before it, so a turn that stores a message and then never yields again (a
  // busy loop, process.exit, out of memory) has already told the parent.
  let batch: RunEvent[] = [];
  const flush = (): void => {
    if (batch.length === 0) return;
    port.post({ type: "events", events: batch });
    batch = [];
  };
  const emit = (event: RunEvent): void => {
    batch.push(event);
    if (event.kind !== "stream") flush();
    else if (batch.length === 1) setImmediate(flush);
  };
  const post = (message: FromWorker): void => {
    flush();
    port.post(message);
  };

  const homeFor = (path: string): StateHome => {
    let home = homes.get(path);
    if (!home) {
      home = openStateHome({ home: path, create: false });
      homes.set(path, home);
    }
    return home;
  };

  const run = async (prepared: PreparedAgentRun): Promise<void> => {
    const controller = new AbortController();
    active.set(prepared.runId, controller);
    let outcome: TurnOutcome;
    try {
      // Pinned for the whole turn: the pool must not close the agent while the turn writes to it.
      outcome = await homeFor(prepared.homePath).withAgent(
        prepared.agentId,
        (agent) =>
          executeTurn(prepared, {
            agent,
            backend: () => loadBackend(prepared.backend),
            signal: controller.signal,
            mode,
            post: emit,
          }),
        { create: false },
      );
    } catch (error) {
      // Only opening the databases can get here; executeTurn reports everything else itself.
      const message = error instanceof Error ? error.message : String(error);
      const code = isStateError(error) ? { code: error.code } : {};
      outcome = {
        status: "failed",
        text: "",
        usage: null,
        persisted: 0,
        failure: { kind: "setup", message, ...code },
      };
    } finally {
      active.delete(prepared.runId);
    }
    post({ type: "done", runId: prepared.runId, outcome });
  };

  port.onMessage((message) => {
    if (message.type === "run") {
      void run(deepFreeze(message.run));
      return;
    }
    const controller = active.get(message.runId);
    if (controller && !controller.signal.aborted) {
      controller.abort(new RunCancelled(message.kind, message.message));
      post({ type: "cancelled", runId: message.runId });
    }
  });
}
