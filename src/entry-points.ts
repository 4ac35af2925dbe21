/**
 * The operations a gateway may never call, loaded on their first call: `import("agentstate")`
 * runs on every gateway start, and the server (hono, zod), backup (tar) and the doctor's import
 * would otherwise load with it. Each function is the module's own, reached through one dynamic
 * import; their types are re-exported from the modules themselves by `index.ts`.
 */
import type * as CreateBackup from "./backup/create-backup.js";
import type * as RestoreBackup from "./backup/restore-backup.js";
import type * as VerifyBackup from "./backup/verify-backup.js";
import type * as DoctorFix from "./doctor/fix.js";
import type * as StartServer from "./server/start-server.js";

type Args<F extends (...args: never[]) => unknown> = Parameters<F>;

/** See `createBackup` in docs/api.md. */
export async function createBackup(
  ...args: Args<typeof CreateBackup.createBackup>
): ReturnType<typeof CreateBackup.createBackup> {
  return (await import("./backup/create-backup.js")).createBackup(...args);
}

/** See `verifyBackup` in docs/api.md. */
export async function verifyBackup(
  ...args: Args<typeof VerifyBackup.verifyBackup>
): ReturnType<typeof VerifyBackup.verifyBackup> {
  return (await import("./backup/verify-backup.js")).verifyBackup(...args);
}

/** See `restoreBackup` in docs/api.md. */
export async function restoreBackup(
  ...args: Args<typeof RestoreBackup.restoreBackup>
): ReturnType<typeof RestoreBackup.restoreBackup> {
  return (await import("./backup/restore-backup.js")).restoreBackup(...args);
}

/** See `runDoctorFix` in docs/api.md. */
export async function runDoctorFix(
  ...args: Args<typeof DoctorFix.runDoctorFix>
): ReturnType<typeof DoctorFix.runDoctorFix> {
  return (await import("./doctor/fix.js")).runDoctorFix(...args);
}

/** See `startServer` in docs/api.md. */
export async function startServer(
  ...args: Args<typeof StartServer.startServer>
): ReturnType<typeof StartServer.startServer> {
  return (await import("./server/start-server.js")).startServer(...args);
}
