import type { StateHome } from "../../home.js";

/** Placeholder until the backup module lands: replaced by a verified archive of the home. */
export async function preMigrationBackup(_home: StateHome): Promise<string> {
  throw new Error("backup is not available");
}
