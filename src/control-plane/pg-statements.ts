import type { Pool, PoolClient } from "pg";
import { StateError } from "../db/errors.js";

/** A statement written with `@name` parameters (as the SQLite stores write them), for `pg`. */
export interface PgStatement {
  readonly name: string;
  readonly text: string;
  readonly params: readonly string[];
}

/**
 * Turns `@name`s into `$n`s, one number per distinct name. Named, so that `pg` prepares it once
 * per connection instead of parsing it on every call.
 */
export function pgStatement(name: string, sql: string): PgStatement {
  const params: string[] = [];
  const text = sql.replace(/@([A-Za-z]\w*)/g, (_, param: string) => {
    const index = params.includes(param) ? params.indexOf(param) : params.push(param) - 1;
    return `$${index + 1}`;
  });
  return Object.freeze({ name: `agentstate_${name}`, text, params: Object.freeze(params) });
}

export function pgStatements<K extends string>(
  prefix: string,
  sql: Readonly<Record<K, string>>,
): Readonly<Record<K, PgStatement>> {
  const out = {} as Record<K, PgStatement>;
  for (const key of Object.keys(sql) as K[]) out[key] = pgStatement(`${prefix}_${key}`, sql[key]);
  return Object.freeze(out);
}

/** Runs one statement (its own transaction) and returns its rows. */
export async function query<Row>(
  on: Pool | PoolClient,
  statement: PgStatement,
  values: Readonly<Record<string, unknown>>,
): Promise<Row[]> {
  const bound = statement.params.map((param) => {
    if (!(param in values)) throw new TypeError(`Expected a value for @${param}`);
    return values[param];
  });
  try {
    const result = await on.query({ name: statement.name, text: statement.text, values: bound });
    return result.rows as Row[];
  } catch (error) {
    throw wrapPgError(error);
  }
}

/**
 * Runs `fn` in a transaction on one pooled connection: committed when it resolves, rolled back
 * when it throws (and the connection dropped if even the rollback failed).
 */
export async function transaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>) {
  const client = await pool.connect().catch((error: unknown) => {
    throw wrapPgError(error);
  });
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    throw wrapPgError(error);
  } finally {
    client.release(broken);
  }
}

/**
 * PostgreSQL errors become StateErrors once, here, as SQLite's do in `db/errors.ts`: callers above
 * see only StateError codes.
 */
export function wrapPgError(error: unknown): unknown {
  if (error instanceof StateError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") {
    // pg's own timeouts and dropped connections carry no code.
    const message = error instanceof Error ? error.message : "";
    if (/timeout|Connection terminated/i.test(message)) {
      return new StateError("E_IO", `PostgreSQL: ${message}`, { cause: error });
    }
    return error;
  }
  const message = `PostgreSQL: ${(error as Error).message}`;
  const details = { pgCode: code };
  if (code.startsWith("23"))
    return new StateError("E_CONSTRAINT", message, { cause: error, details });
  // A NUL character (which SQLite's TEXT keeps) or a byte sequence the database's encoding lacks:
  // the value given is at fault, not the server.
  if (code === "22021" || code === "22P05") {
    return new StateError("E_INVALID_ARGUMENT", message, { cause: error, details });
  }
  if (["40001", "40P01", "55P03", "53300", "57014"].includes(code)) {
    return new StateError("E_BUSY", message, { cause: error, details });
  }
  if (code.startsWith("08") || code.startsWith("57P") || code.startsWith("E")) {
    return new StateError("E_IO", message, { cause: error, details });
  }
  return error;
}
