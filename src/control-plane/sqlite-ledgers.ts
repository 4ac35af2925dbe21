import type { StateHome } from "../home.js";
import type { Clock } from "../stores/checks.js";
import { BackupRunStore } from "../stores/global/backup-run-store.js";
import { MigrationLedgerStore } from "../stores/global/migration-ledger-store.js";
import { MigrationQuarantineStore } from "../stores/global/migration-quarantine-store.js";
import { asyncFacade } from "./async-facade.js";
import type {
  ControlPlaneBackupRuns,
  ControlPlaneMigrationQuarantine,
  ControlPlaneMigrationRuns,
  ControlPlaneMigrationSources,
  ControlPlaneMigrations,
} from "./control-plane-ledgers.js";

/** `BackupRunStore` as it is: each write is one statement under SQLite's write lock. */
export function sqliteBackupRuns(home: StateHome): ControlPlaneBackupRuns {
  const store = new BackupRunStore(home.db);
  return asyncFacade(store, [
    "start",
    "finish",
    "get",
    "list",
    "running",
    "listAll",
  ]) satisfies ControlPlaneBackupRuns;
}

/** `MigrationLedgerStore` and `MigrationQuarantineStore` as they are, on the control plane's clock. */
export function sqliteMigrations(home: StateHome, clock: Clock): ControlPlaneMigrations {
  const ledger = new MigrationLedgerStore(home.db, { clock });
  const quarantine = new MigrationQuarantineStore(home.db, { clock });
  return Object.freeze({
    runs: Object.freeze({
      start: async (id, report) => ledger.startRun(id, report),
      finish: async (id, status, report) => ledger.finishRun(id, status, report),
      get: async (id) => ledger.getRun(id),
      list: async (limit) => ledger.listRuns(limit),
      running: async () => ledger.runningRuns(),
    } satisfies ControlPlaneMigrationRuns),
    sources: Object.freeze({
      find: async (sourceKey) => ledger.findSource(sourceKey),
      record: async (source) => ledger.recordSource(source),
      atPath: async (path) => ledger.sourcesAtPath(path),
      markRemoved: async (sourceKey) => ledger.markRemoved(sourceKey),
      ofRun: async (runId) => ledger.sourcesOfRun(runId),
    } satisfies ControlPlaneMigrationSources),
    quarantine: Object.freeze({
      add: async (entry, now) => quarantine.add(entry, now),
      list: async (options) => quarantine.list(options),
      countsByRun: async () => quarantine.countsByRun(),
    } satisfies ControlPlaneMigrationQuarantine),
  } satisfies ControlPlaneMigrations);
}
