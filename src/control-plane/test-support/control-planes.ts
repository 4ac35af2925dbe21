import { join } from "node:path";
import pg from "pg";
import { afterEach, expect } from "vitest";
import { isStateError, type StateErrorCode } from "../../db/errors.js";
import { openRawSqlite } from "../../db/test-support/raw-sqlite.js";
import { usePostgres } from "../../test-support/postgres.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import type {
  ControlPlane,
  ControlPlaneCronOptions,
  ControlPlaneQueueOptions,
} from "../control-plane.js";
import { openControlPlane } from "../open-control-plane.js";

export const BACKENDS = ["sqlite", "postgres"] as const;
export type Backend = (typeof BACKENDS)[number];

export interface Opened {
  cp: ControlPlane;
  /** Another host on the same control plane (PostgreSQL), or the same home reopened (SQLite). */
  another(options?: OpenOptions): Promise<ControlPlane>;
  /** Counts rows behind the control plane's back (a separate connection, plain SQL). */
  count(table: string, where?: string): Promise<number>;
  /** The database's URL (PostgreSQL) or home path (SQLite). */
  where: string;
}

export interface OpenOptions {
  clock?: () => number;
  queue?: ControlPlaneQueueOptions;
  cron?: ControlPlaneCronOptions;
}

/**
 * Opens control planes on either backend, each test on an empty database: a fresh home for
 * SQLite, a fresh database in this file's throwaway cluster for PostgreSQL. All closed after it.
 */
export function useControlPlanes(): (backend: Backend, options?: OpenOptions) => Promise<Opened> {
  const tempDir = useTempDirs();
  const clusterUrl = usePostgres();
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  const track = async (opening: Promise<ControlPlane>) => {
    const cp = await opening;
    closers.push(() => cp.close());
    return cp;
  };
  return async (backend, options = {}) => {
    if (backend === "sqlite") {
      const home = tempDir();
      const open = (o: OpenOptions = options) => track(openControlPlane({ home, ...o }));
      const cp = await open();
      return { cp, another: open, count: (t, w) => countSqlite(home, t, w), where: home };
    }
    const url = await freshDatabase(clusterUrl(), "cp");
    const open = (o: OpenOptions = options) => track(openControlPlane({ url, ...o }));
    const cp = await open();
    return { cp, another: open, count: (t, w) => countPostgres(url, t, w), where: url };
  };
}

let created = 0;

/**
 * A new empty database on the test's PostgreSQL server (`serverUrl` names its `postgres`
 * database), named after `prefix`, this process and a counter; its URL.
 */
export async function freshDatabase(serverUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${process.pid}_${++created}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  return serverUrl.replace(/\/postgres$/, `/${name}`);
}

export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>) {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function countSqlite(home: string, table: string, where = "TRUE"): Promise<number> {
  const raw = openRawSqlite(join(home, "state", "state.sqlite"), { readonly: true });
  try {
    return Number(raw.prepare(`SELECT count(*) FROM ${table} WHERE ${where}`).pluck().get());
  } finally {
    raw.close();
  }
}

function countPostgres(url: string, table: string, where = "TRUE"): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query(`SELECT count(*) AS n FROM ${table} WHERE ${where}`);
    return Number(rows[0].n);
  });
}

/** The StateError `promise` rejects with, checked to carry `code` (and `message`, if given). */
export async function rejects(promise: Promise<unknown>, code: StateErrorCode, message?: RegExp) {
  const error = await promise.then(
    () => expect.unreachable(`expected ${code}`),
    (e: unknown) => e,
  );
  expect(isStateError(error, code), String(error)).toBe(true);
  if (message) expect((error as Error).message).toMatch(message);
  return error as { details: Record<string, unknown> };
}
