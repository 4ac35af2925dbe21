import type { AgentSource } from "../stores/agent/agent-state.js";
import { inputStoreOf } from "../stores/agent/agent-stores.js";
import type {
  AcceptOptions,
  AcceptResult,
  ClaimOptions,
  InputCompletion,
  InputListOptions,
  InputRecord,
  InputStore,
  InputView,
  NewInput,
  RecoveredInputs,
  RecoveredSessionInputs,
} from "../stores/agent/input-store.js";

/**
 * Inbound inputs addressed by `(agentId, sessionKey)` or `(agentId, inputId)`: the home resolves
 * the agent's database. Reads never create an agent; accepting a message creates and registers it.
 */
export class InputsApi {
  constructor(private readonly home: AgentSource) {}

  private read(agentId: string): InputStore {
    return inputStoreOf(this.home.agent(agentId, { create: false }));
  }

  /** Records a message; with `options`, also claims it and appends its events (one transaction). */
  accept(
    agentId: string,
    sessionKey: string,
    input: NewInput,
    options?: AcceptOptions,
  ): AcceptResult {
    return inputStoreOf(this.home.agent(agentId)).accept(sessionKey, input, options);
  }

  claim(agentId: string, sessionKey: string, owner: string, options: ClaimOptions): InputRecord[] {
    return this.read(agentId).claim(sessionKey, owner, options);
  }

  extend(
    agentId: string,
    inputId: string,
    owner: string,
    options: { leaseMs: number },
  ): InputRecord {
    return this.read(agentId).extend(inputId, owner, options);
  }

  release(agentId: string, inputId: string, owner: string): InputRecord {
    return this.read(agentId).release(inputId, owner);
  }

  /** Completes the input and appends the turn's last events in one transaction. */
  complete(
    agentId: string,
    inputId: string,
    owner: string,
    completion?: InputCompletion,
  ): InputRecord {
    return this.read(agentId).complete(inputId, owner, completion);
  }

  recover(agentId: string, sessionKey: string): RecoveredInputs {
    return this.read(agentId).recover(sessionKey);
  }

  /**
   * `recover` for every session key of the agent with a claimed or interrupted input (see
   * `InputStore.recoverAll`); only keys with interrupted inputs are reported.
   */
  recoverAll(agentId: string): RecoveredSessionInputs[] {
    return this.read(agentId).recoverAll();
  }

  requeue(agentId: string, inputId: string): InputRecord {
    return this.read(agentId).requeue(inputId);
  }

  abandon(agentId: string, inputId: string, reason: string): InputRecord {
    return this.read(agentId).abandon(inputId, reason);
  }

  get(agentId: string, inputId: string): InputRecord | undefined {
    return this.read(agentId).get(inputId);
  }

  list(agentId: string, options?: InputListOptions): InputRecord[] {
    return this.read(agentId).list(options);
  }

  /** `list` as `recover` would leave it, writing nothing (see `InputStore.listAsRecovered`). */
  listAsRecovered(agentId: string, options?: InputListOptions): InputView[] {
    return this.read(agentId).listAsRecovered(options);
  }
}
