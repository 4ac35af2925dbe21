import { type Database, openDatabase } from "./db/database.js";
import { layoutUpgradePending, type UpgradeProgressListener } from "./db/layout-upgrade.js";
import { type DatabaseRole, latestSchemaVersion } from "./db/schema.js";
import type { HomeDatabaseOptions } from "./home-options.js";
import { coldIndexMovePending, finishColdIndexMove } from "./stores/agent/cold-index-upgrade.js";
import { TranscriptIndex } from "./stores/agent/transcript-index.js";

/**
 * What a writable open of an agent finishes after the migrations, reporting through the upgrade
 * listener: an upgraded database's cold search rows moved to the cold index file, and the search
 * backlog (an upgraded database's whole history, or the few events a writer closed with) indexed
 * in bounded transactions.
 */
export function finishAgentOpen(
  db: Database,
  onProgress: UpgradeProgressListener | undefined,
): void {
  finishColdIndexMove(db, onProgress);
  new TranscriptIndex(db).catchUpAtOpen(
    onProgress && ((done, total) => onProgress({ step: "search index", done, total })),
  );
}

/**
 * Opens one of the home's databases. A read-only home still brings a database of an older
 * release up to date first (the one time it takes the write lock): the stores read today's schema.
 */
export function openHomeDatabase(
  path: string,
  role: DatabaseRole,
  options: HomeDatabaseOptions,
): Database {
  const db = openDatabase({ path, role, ...options });
  // A writable open has brought the file up to date itself.
  if (!options.readonly) return db;
  const current =
    db.schemaVersion >= latestSchemaVersion(role) &&
    (role !== "agent" || !(layoutUpgradePending(db) || coldIndexMovePending(db)));
  if (current) return db;
  db.close();
  const { readonly: _, ...writable } = options;
  const upgrader = openDatabase({ path, role, create: false, ...writable });
  try {
    if (role === "agent") finishAgentOpen(upgrader, options.onUpgradeProgress);
  } finally {
    upgrader.close();
  }
  return openDatabase({ path, role, ...options });
}
