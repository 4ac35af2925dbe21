import { StateError } from "./db/errors.js";

export const MAX_AGENT_ID_LENGTH = 64;
// Letters, digits, `_`, `-`, `.`; starting with a letter, digit or `_`. An agent id becomes a
// directory name, so separators, `..` and control characters can never appear.
const AGENT_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** Returns `agentId` when it is safe as a directory name, else throws `E_INVALID_ID`. */
export function validateAgentId(agentId: unknown): string {
  if (typeof agentId !== "string") {
    throw new StateError("E_INVALID_ID", `agent id must be a string, got ${typeof agentId}`);
  }
  const shown = JSON.stringify(agentId.slice(0, 80));
  if (agentId.length === 0 || agentId.length > MAX_AGENT_ID_LENGTH) {
    throw new StateError(
      "E_INVALID_ID",
      `agent id ${shown} must be 1 to ${MAX_AGENT_ID_LENGTH} characters`,
      { details: { agentId } },
    );
  }
  if (!AGENT_ID.test(agentId) || agentId.includes("..")) {
    throw new StateError(
      "E_INVALID_ID",
      `agent id ${shown} may use only letters, digits, "_", "-" and "." (no path separators, no "..")`,
      { details: { agentId } },
    );
  }
  return agentId;
}
