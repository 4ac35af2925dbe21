import { join } from "node:path";
import { openRawSqlite, type RawSqlite } from "../../db/test-support/raw-sqlite.js";

// What the overview and the charts must show, computed with plain SQL on a connection of its own:
// the table families are written out here as table names, not taken from the code under test.

export const agentDbPath = (home: string, agentId: string) =>
  join(home, "agents", agentId, "agent", "agent.sqlite");
export const globalDbPath = (home: string) => join(home, "state", "state.sqlite");

export function withRaw<T>(path: string, fn: (db: RawSqlite) => T): T {
  const db = openRawSqlite(path, { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

export const scalar = (db: RawSqlite, sql: string, ...params: unknown[]) =>
  db
    .prepare(sql)
    .pluck()
    .get(...params) as number | string | null;

export interface FamilyBytes {
  file: number;
  free: number;
  events: number;
  blobs: number;
  vfs: number;
  fts: number;
  other: number;
}

/** Bytes per table family by dbstat; `other` is the rest of the file's used pages. */
export function familiesBySql(db: RawSqlite): FamilyBytes {
  const sum = (where: string) =>
    Number(
      scalar(
        db,
        `SELECT coalesce(sum(pgsize), 0) FROM dbstat
         WHERE name IN (SELECT name FROM sqlite_schema WHERE ${where})`,
      ),
    );
  const events = sum("tbl_name IN ('transcript_events', 'transcript_snapshots')");
  const blobs = sum(
    "tbl_name IN ('transcript_blobs', 'transcript_blob_refs', 'tool_artifacts', 'run_artifacts')",
  );
  const vfs = sum("tbl_name IN ('vfs_entries', 'vfs_chunks')");
  const fts = sum(
    `tbl_name LIKE 'transcript\\_fts%' ESCAPE '\\' OR tbl_name LIKE 'facts\\_fts%' ESCAPE '\\'
     OR tbl_name LIKE 'cold\\_fts%' ESCAPE '\\' OR tbl_name = 'search_index_state'`,
  );
  const pageSize = Number(scalar(db, "PRAGMA page_size"));
  const file = Number(scalar(db, "PRAGMA page_count")) * pageSize;
  const free = Number(scalar(db, "PRAGMA freelist_count")) * pageSize;
  return { file, free, events, blobs, vfs, fts, other: file - free - events - blobs - vfs - fts };
}

export interface CronCount {
  job: string;
  status: string;
  day: string;
  n: number;
}

/** Runs per job, status and UTC day (YYYY-MM-DD) over the last `days` days, today included. */
export function cronCountsBySql(home: string, days: number): CronCount[] {
  return withRaw(
    globalDbPath(home),
    (db) =>
      db
        .prepare(
          `SELECT job_id AS job, status, date(ran_at / 1000, 'unixepoch') AS day, count(*) AS n
           FROM cron_run_logs WHERE date(ran_at / 1000, 'unixepoch') >= date('now', ?)
           GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
        )
        .all(`-${days - 1} days`) as CronCount[],
  );
}

/** Entries per delivery queue and stored status. */
export function queueCountsBySql(home: string): { queue: string; status: string; n: number }[] {
  return withRaw(
    globalDbPath(home),
    (db) =>
      db
        .prepare(
          `SELECT queue_name AS queue, status, count(*) AS n FROM delivery_queue_entries
           GROUP BY 1, 2`,
        )
        .all() as { queue: string; status: string; n: number }[],
  );
}

export interface UsageDay {
  day: string;
  messages: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: number;
  priced: number;
}

const IN_WINDOW = "date(created_at / 1000, 'unixepoch') >= date('now', ?)";
const tokensOf = (field: string) =>
  `sum(CASE WHEN json_type(event_json, '$.message.usage.${field}') = 'integer'
       THEN json_extract(event_json, '$.message.usage.${field}') ELSE 0 END)`;

/** Events of every type per UTC day of one agent's database, over the last `days` days. */
export function eventsPerDayBySql(db: RawSqlite, days: number): { day: string; events: number }[] {
  return db
    .prepare(
      `SELECT date(created_at / 1000, 'unixepoch') AS day, count(*) AS events
       FROM transcript_events WHERE ${IN_WINDOW} GROUP BY 1 ORDER BY 1`,
    )
    .all(`-${days - 1} days`) as { day: string; events: number }[];
}

/** Assistant messages' tokens and recorded cost per UTC day, read from the events' JSON. */
export function usagePerDayBySql(db: RawSqlite, days: number): UsageDay[] {
  return db
    .prepare(
      `SELECT date(created_at / 1000, 'unixepoch') AS day, count(*) AS messages,
         ${tokensOf("input")} AS input, ${tokensOf("output")} AS output,
         ${tokensOf("cacheRead")} AS cacheRead, ${tokensOf("cacheWrite")} AS cacheWrite,
         total(json_extract(event_json, '$.message.usage.cost.total')) AS cost,
         count(json_extract(event_json, '$.message.usage.cost.total')) AS priced
       FROM transcript_events
       WHERE json_extract(event_json, '$.type') = 'message'
         AND json_extract(event_json, '$.message.role') = 'assistant' AND ${IN_WINDOW}
       GROUP BY 1 ORDER BY 1`,
    )
    .all(`-${days - 1} days`) as UsageDay[];
}
