import { createBackup } from "../backup/create-backup.js";
import { verifyBackup } from "../backup/verify-backup.js";
import { StateError } from "../db/errors.js";
import type { StateHome } from "../home.js";

/**
 * The backup `doctor --fix` takes before it writes a row: an archive of the home (databases and
 * the legacy files about to be imported), read back and verified. Nothing is imported unless this
 * succeeds, so a bad import can always be undone with `agentstate backup restore`.
 */
export async function preMigrationBackup(home: StateHome): Promise<string> {
  const made = await createBackup(home);
  const verified = await verifyBackup(made.archive);
  if (!made.ok || !verified.ok) {
    throw new StateError(
      "E_CORRUPT",
      `the pre-migration backup ${made.archive} did not verify: ${verified.firstProblem ?? "a snapshot failed its integrity check"}`,
      { details: { archive: made.archive } },
    );
  }
  return made.archive;
}
