import type { CheckpointsMode } from "./db/checkpoints.js";
import type { DriverName } from "./db/driver.js";
import type { JournalMode } from "./db/filesystem.js";
import type { UpgradeProgressListener } from "./db/layout-upgrade.js";
import type { RetentionOptions } from "./stores/retention.js";

export interface OpenStateHomeOptions {
  /** The home directory; see `resolveHomePath` for the default. */
  home?: string;
  /** Create the home and its global database when missing (default true). */
  create?: boolean;
  /**
   * Open every database for reading only (implies `create: false`): no write lock is ever taken,
   * so a reader never waits on, or blocks, a live gateway. Writes fail; agents are not registered.
   */
  readonly?: boolean;
  /** `wal` (default) or `rollback`; see `openDatabase`. Applies to the agent databases too. */
  journalMode?: JournalMode;
  /**
   * The SQLite engine for every database of the home: `"node"` (node:sqlite) or
   * `"better-sqlite3"`. Default: `$AGENTSTATE_SQLITE_DRIVER`, else node:sqlite where it is
   * complete (Node 24), else better-sqlite3.
   */
  driver?: DriverName;
  /**
   * Told how the data upgrade of an agent database written by an older release is going. The
   * upgrade runs once, when the agent is first opened, in bounded transactions; a process killed
   * during it resumes where it stopped on the next open.
   */
  onUpgradeProgress?: UpgradeProgressListener;
  /** `background` (default) or `inline`, for every database of the home; see `openDatabase`. */
  checkpoints?: CheckpointsMode;
  /**
   * How many agent databases stay open at once (default 64): past it the least recently used
   * unpinned agent is closed, and reopened by the next `home.agent()`. Each open agent costs
   * about 1 MB and 3 file descriptors.
   */
  maxOpenAgents?: number;
  /**
   * How long completed inputs and settled delivery receipts are kept (by age and count); applied
   * by `sweepExpired` and `agentstate gc`. Default: the `retention` section of the home's
   * `agentstate.json` (docs/maintenance.md), over 30 days, at most 1,000 completed inputs per
   * session key and 100,000 receipts per queue.
   */
  retention?: RetentionOptions;
}

export const HOME_OPTION_KEYS = new Set([
  "home",
  "create",
  "readonly",
  "journalMode",
  "driver",
  "onUpgradeProgress",
  "checkpoints",
  "maxOpenAgents",
  "retention",
]);
export const AGENT_OPTION_KEYS = new Set(["create"]);

/** The options every database of a home is opened with. */
export type HomeDatabaseOptions = Pick<
  OpenStateHomeOptions,
  "readonly" | "journalMode" | "driver" | "checkpoints" | "onUpgradeProgress"
>;
