import { isStateError, type StateErrorCode } from "../db/errors.js";

/** Exit status per error code, in one place. 0 is success; 1 is anything unexpected. */
const EXIT_CODES: Partial<Record<StateErrorCode, number>> = {
  E_INVALID_ARGUMENT: 2,
  E_INVALID_ID: 2,
  E_NOT_FOUND: 3,
  E_NOT_A_DATABASE: 4,
  E_SCHEMA_TOO_NEW: 4,
  E_SCHEMA_MISMATCH: 4,
  E_CORRUPT_SOURCE: 4,
  E_CORRUPT: 4,
  E_DAMAGED: 4,
  E_CONFLICT: 5,
  E_BUSY: 5,
  // Another host holds the agent, or took it over: retrying on this host cannot succeed.
  E_LEASE_LOST: 5,
  E_NOT_OWNER: 5,
  E_TOO_LARGE: 6,
  E_PATH: 7,
  E_UNSAFE_FILESYSTEM: 8,
};

export function exitCodeFor(error: unknown): number {
  return isStateError(error) ? (EXIT_CODES[error.code] ?? 1) : 1;
}

/** Prints an error for a person (or as JSON with `--json`) and returns the exit status. */
export function reportError(error: unknown, json: boolean): number {
  const code = exitCodeFor(error);
  if (json) {
    const body = isStateError(error)
      ? error.toJSON()
      : { code: "E_INTERNAL", message: error instanceof Error ? error.message : String(error) };
    process.stderr.write(`${JSON.stringify({ error: body })}\n`);
  } else if (isStateError(error) || error instanceof TypeError) {
    process.stderr.write(`agentstate: ${error.message}\n`);
  } else {
    process.stderr.write(
      `agentstate: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  return code;
}
