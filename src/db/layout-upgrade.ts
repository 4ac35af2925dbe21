import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { SqlDriver, SqlStatement } from "./driver.js";
import { StateError } from "./errors.js";
import { withTempInMemory } from "./temp-store.js";

/** Where an upgrade stands, for a progress line: `done` of `total` rows copied so far. */
export interface UpgradeProgress {
  step: string;
  done: number;
  total: number;
}

export type UpgradeProgressListener = (progress: UpgradeProgress) => void;

/** Rows copied per transaction: a few MB of WAL, a few tens of ms of write lock. */
export const UPGRADE_BATCH_ROWS = 5000;

let batchRowsFromEnv: number | undefined;

/**
 * The batch size, overridable by `$AGENTSTATE_UPGRADE_BATCH_ROWS` (read on the first upgrade,
 * so a bad value fails that open, not every import): a small batch stretches the copy into many
 * commits, which is how the crash tests stop it half-way.
 */
function envBatchRows(): number {
  batchRowsFromEnv ??= batchRowsOf(process.env.AGENTSTATE_UPGRADE_BATCH_ROWS);
  return batchRowsFromEnv;
}

/** The batch size a setting names, or the default when unset; anything else is refused. */
export function batchRowsOf(setting: string | undefined): number {
  if (setting === undefined || setting === "") return UPGRADE_BATCH_ROWS;
  const rows = Number(setting);
  if (!/^[0-9]+$/.test(setting) || !Number.isSafeInteger(rows) || rows < 1) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `AGENTSTATE_UPGRADE_BATCH_ROWS must be a whole number of rows, at least 1, got ${JSON.stringify(setting)}`,
      { details: { setting } },
    );
  }
  return rows;
}

const COPY_EVENTS = `INSERT INTO transcript_events
    (id, session_no, seq, event_id, event_type, parent_id, idempotency_key, created_at, event_json)
  SELECT e.id, s.session_no, e.seq,
    coalesce(i.event_id, json_extract(e.event_json, '$.id'), 'seq-' || e.seq),
    coalesce(i.event_type, json_extract(e.event_json, '$.type'), ''),
    CASE WHEN i.has_parent THEN i.parent_id END,
    i.message_idempotency_key, e.created_at, e.event_json
  FROM transcript_events_v6 e
  JOIN sessions s ON s.session_id = e.session_id
  LEFT JOIN transcript_identities_v6 i INDEXED BY transcript_identities_v6_seq ON i.session_id = e.session_id AND i.seq = e.seq
  WHERE e.id > ? ORDER BY e.id LIMIT ?`;

// 0007 dropped the old identity table's (session_id, seq) index along with the others, and the
// copy joins identities on (session_id, seq): without it each row scans its session's identities,
// so a 30,000-event session took over a minute (seconds per batch, under the write lock). Built
// once before the copy, in its own transaction; it goes with the table in the last step.
const INDEX_OLD_IDENTITIES = `CREATE INDEX IF NOT EXISTS transcript_identities_v6_seq
  ON transcript_identities_v6 (session_id, seq)`;

function finishSql(): string {
  const url = new URL("./schema/upgrades/0007_transcript_layout_v2_finish.sql", import.meta.url);
  return readFileSync(fileURLToPath(url), "utf8");
}

/** True while an agent database still has rows of an older layout to copy. */
export function layoutUpgradePending(driver: Pick<SqlDriver, "prepare">): boolean {
  return (
    driver
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'transcript_events_v6'")
      .get() !== undefined
  );
}

function inTransaction(driver: SqlDriver, body: () => void): void {
  driver.exec("BEGIN IMMEDIATE");
  try {
    body();
    driver.exec("COMMIT");
  } catch (error) {
    if (driver.inTransaction) driver.exec("ROLLBACK");
    throw error;
  }
}

/**
 * The copy statement and the number of rows to copy, prepared under the write lock while the old
 * tables surely exist (with their lookup index built first); undefined when another process has
 * finished the upgrade meanwhile.
 */
function planCopy(driver: SqlDriver): { copy: SqlStatement; total: number } | undefined {
  let plan: { copy: SqlStatement; total: number } | undefined;
  inTransaction(driver, () => {
    if (!layoutUpgradePending(driver)) return;
    driver.exec(INDEX_OLD_IDENTITIES);
    const count = driver.prepare<{ n: number }>("SELECT count(*) AS n FROM transcript_events_v6");
    plan = { copy: driver.prepare(COPY_EVENTS), total: count.get()?.n ?? 0 };
  });
  return plan;
}

/**
 * Copies the events of a schema-6 database into the layout of agent/0007 in transactions of
 * `batchRows` rows, then drops the old tables. Ids are kept, and the next batch starts after the
 * largest id already copied, so a process killed half-way (or two processes at once) simply
 * carry on where the last commit stopped.
 */
function copyEvents(
  driver: SqlDriver,
  batchRows: number,
  onProgress: UpgradeProgressListener | undefined,
): void {
  const plan = planCopy(driver);
  if (plan === undefined) return;
  const { copy, total } = plan;
  const copied = driver.prepare<{ top: number; n: number }>(
    "SELECT coalesce(max(id), 0) AS top, count(*) AS n FROM transcript_events",
  );
  for (;;) {
    let done = 0;
    let changes = 0;
    inTransaction(driver, () => {
      if (!layoutUpgradePending(driver)) return;
      const before = copied.get() ?? { top: 0, n: 0 };
      changes = copy.run(before.top, batchRows).changes;
      done = before.n + changes;
    });
    if (changes === 0) return;
    onProgress?.({ step: "transcript events", done, total });
  }
}

/**
 * Finishes the transcript layout upgrade of an agent database, if one is pending: a no-op
 * costing one query otherwise. The last step rebuilds two tables that others reference, which
 * needs foreign keys off; that pragma cannot change inside a transaction, so it is set around it,
 * and `foreign_key_check` must find nothing before the commit.
 */
export function finishLayoutUpgrade(
  driver: SqlDriver,
  options: { onProgress?: UpgradeProgressListener; batchRows?: number } = {},
): void {
  if (!layoutUpgradePending(driver)) return;
  // Index builds, sorts and foreign_key_check's automatic indexes too.
  withTempInMemory(driver, () => {
    copyEvents(driver, options.batchRows ?? envBatchRows(), options.onProgress);
    dropOldLayout(driver);
  });
}

/** The last step: see the finish file. Foreign keys off around its one transaction. */
function dropOldLayout(driver: SqlDriver): void {
  driver.exec("PRAGMA foreign_keys = OFF");
  try {
    inTransaction(driver, () => {
      if (!layoutUpgradePending(driver)) return;
      driver.exec(finishSql());
      const broken = driver.prepare("PRAGMA foreign_key_check").all();
      if (broken.length > 0) {
        throw new StateError(
          "E_CORRUPT",
          `the transcript upgrade of ${driver.path} would leave ${broken.length} dangling references (first: ${JSON.stringify(broken[0])}); nothing was changed`,
          { details: { path: driver.path, references: broken.slice(0, 10) } },
        );
      }
    });
  } finally {
    driver.exec("PRAGMA foreign_keys = ON");
  }
}
