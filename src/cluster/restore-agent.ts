import { execFile } from "node:child_process";
import { chmodSync, existsSync, renameSync, rmSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { StateError } from "../db/errors.js";
import { shadowDir } from "./commit-position.js";

const run = promisify(execFile);

/**
 * Replaces the agent's database with the replica under `prefix` (`litestream restore`): restored
 * beside it first, so a failed restore leaves the old file as it was. The old WAL, index and
 * Litestream's shadow copy go with the old file: they belong to a history the replica replaced.
 */
export async function restoreAgentDatabase(
  binary: string,
  prefix: string,
  dbPath: string,
): Promise<void> {
  const temporary = `${dbPath}.restoring`;
  rmSync(temporary, { force: true });
  try {
    await run(binary, ["restore", "-o", temporary, pathToFileURL(prefix).href], {
      timeout: 600_000,
    });
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new StateError("E_IO", `could not restore ${dbPath} from its replica ${prefix}`, {
      cause: error,
      details: {
        path: dbPath,
        replica: prefix,
        stderr: String((error as { stderr?: unknown }).stderr ?? ""),
      },
    });
  }
  for (const file of [`${dbPath}-wal`, `${dbPath}-shm`]) rmSync(file, { force: true });
  rmSync(shadowDir(dbPath), { recursive: true, force: true });
  chmodSync(temporary, 0o600);
  renameSync(temporary, dbPath);
  if (!existsSync(dbPath)) throw new StateError("E_IO", `restore left no database at ${dbPath}`);
}
