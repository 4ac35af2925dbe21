import type { ProcessOwner } from "../db/process-owner.js";
import type { BackupRun, BackupRunStatus } from "../stores/global/backup-run-rows.js";
import type {
  JsonObject,
  MigrationRun,
  MigrationRunStatus,
  MigrationSource,
  NewMigrationSource,
} from "../stores/global/migration-ledger-rows.js";
import type {
  NewQuarantinedLine,
  QuarantinedLine,
  QuarantineListOptions,
} from "../stores/global/migration-quarantine-rows.js";
import type { JsonValue } from "../stores/json.js";

/**
 * The backup run ledger, with the semantics of `BackupRunStore` on either backend. `finish` is
 * one statement that ends only a running run, so of hosts ending one run exactly one does.
 */
export interface ControlPlaneBackupRuns {
  /** Records a running run owned by `owner` (default: this process); E_CONFLICT if its id exists. */
  start(id: string, createdAt: number, archivePath: string, owner?: ProcessOwner): Promise<void>;
  /** Ends a running run; false when there is no such running run (already ended). */
  finish(
    id: string,
    status: Exclude<BackupRunStatus, "running">,
    manifest: JsonValue,
  ): Promise<boolean>;
  get(id: string): Promise<BackupRun | undefined>;
  /** The most recent runs first (ties by id), at most `limit` (default 100). */
  list(limit?: number): Promise<BackupRun[]>;
  /** The runs not ended yet, oldest first: in progress, or left by a process that died. */
  running(): Promise<BackupRun[]>;
  /** Every run, the most recent first. */
  listAll(): Promise<BackupRun[]>;
}

/** Migration runs, as `MigrationLedgerStore`'s run methods. */
export interface ControlPlaneMigrationRuns {
  /** Records a running run owned by this process (E_CONFLICT if its id exists). */
  start(id: string, report?: JsonObject): Promise<MigrationRun>;
  /** Ends a run (E_NOT_FOUND without it), stamping its finish time. */
  finish(
    id: string,
    status: Exclude<MigrationRunStatus, "running">,
    report: JsonObject,
  ): Promise<MigrationRun>;
  /** A run (E_NOT_FOUND without it). */
  get(id: string): Promise<MigrationRun>;
  /** The most recent runs first (ties by id), at most `limit` (default 50). */
  list(limit?: number): Promise<MigrationRun[]>;
  /** The runs not ended yet, oldest first. */
  running(): Promise<MigrationRun[]>;
}

/** Migrated source files, as `MigrationLedgerStore`'s source methods. */
export interface ControlPlaneMigrationSources {
  find(sourceKey: string): Promise<MigrationSource | undefined>;
  /** Records a source or its new outcome (E_CONSTRAINT when `lastRunId` is not in the ledger). */
  record(source: NewMigrationSource): Promise<void>;
  /** Every recorded version of the file at `path` (home-relative), latest import first. */
  atPath(path: string): Promise<MigrationSource[]>;
  markRemoved(sourceKey: string): Promise<void>;
  /** The sources a run recorded last, by path. */
  ofRun(runId: string): Promise<MigrationSource[]>;
}

/** Quarantined lines of legacy sources, as `MigrationQuarantineStore`; bytes as BYTEA. */
export interface ControlPlaneMigrationQuarantine {
  /** Keeps a line (default time: the clock's); false when that line's bytes are already kept. */
  add(entry: NewQuarantinedLine, now?: number): Promise<boolean>;
  /** Lines by path and line number; every run's or one run's. */
  list(options?: QuarantineListOptions): Promise<QuarantinedLine[]>;
  /** How many lines each run quarantined (runs that quarantined none are absent). */
  countsByRun(): Promise<Map<string, number>>;
}

/** The migration ledger: runs, their sources and quarantined lines. Every write is one statement. */
export interface ControlPlaneMigrations {
  readonly runs: ControlPlaneMigrationRuns;
  readonly sources: ControlPlaneMigrationSources;
  readonly quarantine: ControlPlaneMigrationQuarantine;
}
