// Parity tests of a control-plane backend against the SQLite store it mirrors (the oracle): the
// same call on both must give the same value or the same refusal.
import { expect } from "vitest";
import { isStateError } from "../../db/errors.js";

/**
 * What a call gave: `{ ok }` with its value (after `settle`, e.g. a stream read to its end), or
 * `{ code, message }` for a StateError, `{ thrown }` with the message of any other error.
 */
export async function outcome(
  call: () => unknown,
  settle: (value: unknown) => unknown = (value) => value,
): Promise<unknown> {
  try {
    return { ok: await settle(await call()) };
  } catch (error) {
    if (isStateError(error)) return { code: error.code, message: error.message };
    return { thrown: (error as Error).message };
  }
}

/** The same call on the subject and on the oracle: the same outcome expected; returns it. */
export async function same<A, B>(
  subject: A,
  oracle: B,
  call: (side: A | B) => unknown,
  settle?: (value: unknown) => unknown,
): Promise<unknown> {
  const got = await outcome(() => call(subject), settle);
  expect(got).toEqual(await outcome(() => call(oracle), settle));
  return got;
}
