import { cancelledOutcome } from "./cancel.js";
import type { TurnOutcome } from "./execute-turn.js";
import type { PreparedAgentRun } from "./prepared-run.js";
import { RunControl } from "./run-control.js";
import type { RunEventBus } from "./run-event-bus.js";
import type { WorkerDeath, WorkerTransport } from "./transport.js";

export interface Dispatched {
  outcome: TurnOutcome;
  /** The worker may take another run: it finished cleanly and was never cancelled. */
  reusable: boolean;
}

export interface DispatchOptions {
  bus: RunEventBus;
  signal?: AbortSignal;
  /** How long a cancelled worker gets to stop before it is terminated. */
  cancelGraceMs: number;
  /**
   * Called once the worker is dead without having finished: delivers to the bus what the run
   * stored but never reported, and returns how many transcript events it stored.
   */
  readBack: () => number;
}

function deadOutcome(death: WorkerDeath, persisted: number): TurnOutcome {
  return { status: "crashed", text: "", usage: null, persisted, failure: { ...death } };
}

/**
 * Runs one prepared turn on a worker and settles with its outcome, whatever happens: the worker's
 * own `done`, a cancel it acknowledges in time, a cancel it ignores (terminated after the grace
 * period), or its death. Never rejects, so a dead worker cannot leave the parent waiting. A
 * worker that did not finish is read back only once it is gone, when it can store no more.
 */
export function dispatchRun(
  transport: WorkerTransport,
  run: PreparedAgentRun,
  options: DispatchOptions,
): Promise<Dispatched> {
  const { bus } = options;
  return new Promise((resolve) => {
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    let control: RunControl | undefined;
    // Set while the parent terminates a worker that ignored its cancel: its exit is expected.
    let terminating = false;
    const unlisten = transport.listen({
      message(message) {
        if (message.type === "events") {
          for (const event of message.events) if (event.runId === run.runId) bus.push(event);
        } else if (message.type === "done" && message.runId === run.runId) {
          settle(message.outcome, control?.cancelled === null);
        }
      },
      exit(death) {
        if (!terminating) settle(deadOutcome(death, options.readBack()), false);
      },
    });
    bus.onHandlerError = (error) => {
      const message = error instanceof Error ? error.message : String(error);
      control?.cancel("handler", `a parent event handler threw: ${message}`);
    };
    function settle(outcome: TurnOutcome, reusable: boolean): void {
      if (settled) return;
      settled = true;
      clearTimeout(grace);
      control?.dispose();
      unlisten();
      resolve({ outcome, reusable });
    }
    if (!transport.alive) {
      const death = {
        kind: "exit",
        message: "the worker was gone before the run started",
      } as const;
      settle(deadOutcome(death, 0), false);
      return;
    }
    // The run goes out first: a cancel for a run the worker has not seen would be ignored.
    transport.send({ type: "run", run });
    control = new RunControl(run.timeoutMs, options.signal, (cancel) => {
      transport.send({
        type: "cancel",
        runId: run.runId,
        kind: cancel.kind,
        message: cancel.message,
      });
      grace = setTimeout(async () => {
        terminating = true;
        await transport.kill();
        if (settled) return; // it sent `done` after all while it was being terminated
        const { status, failure } = cancelledOutcome(cancel.kind, cancel.message, true);
        settle({ status, text: "", usage: null, persisted: options.readBack(), failure }, false);
      }, options.cancelGraceMs);
    });
  });
}
