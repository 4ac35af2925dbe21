// Parity tests of a control-plane backend against the SQLite store it mirrors (the oracle): the
// same call on both must give the same value or the same refusal.
import { join } from "node:path";
import { expect } from "vitest";
import { isStateError } from "../../db/errors.js";
import { openRawSqlite } from "../../db/test-support/raw-sqlite.js";
import { type Backend, withClient } from "./control-planes.js";

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

export interface StoredRowsOptions {
  /** BIGINT columns, which PostgreSQL's driver returns as strings: made numbers (null stays). */
  bigints?: readonly string[];
  /** Byte columns, as hex: rows compare by content whatever class a driver returns. */
  bytes?: readonly string[];
}

/**
 * Every row `sql` selects, read without the code under test: from the global SQLite database of
 * the home at `where`, or from the PostgreSQL database at the URL `where`.
 */
export async function storedRows(
  backend: Backend,
  where: string,
  sql: string,
  { bigints = [], bytes = [] }: StoredRowsOptions = {},
): Promise<Record<string, unknown>[]> {
  const hex = (row: Record<string, unknown>) => {
    const out = { ...row };
    for (const column of bytes)
      out[column] = Buffer.from(row[column] as Uint8Array).toString("hex");
    return out;
  };
  if (backend === "sqlite") {
    const raw = openRawSqlite(join(where, "state", "state.sqlite"), { readonly: true });
    try {
      return (raw.prepare(sql).all() as Record<string, unknown>[]).map(hex);
    } finally {
      raw.close();
    }
  }
  const { rows } = await withClient(where, (client) => client.query(sql));
  return rows.map((row: Record<string, unknown>) => {
    const out = hex(row);
    for (const column of bigints) out[column] = row[column] === null ? null : Number(row[column]);
    return out;
  });
}
