import { execFile } from "node:child_process";
import { chmodSync, existsSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { StateError } from "../db/errors.js";
import { shadowDir } from "./commit-position.js";
import type { LitestreamReplica } from "./replica-store.js";

const run = promisify(execFile);

export interface RestoreSource {
  replica: LitestreamReplica;
  /** The replica as a user finds it, for messages. */
  where: string;
  /** Where to write the restore's Litestream config (removed after). */
  config: string;
}

/**
 * Replaces the agent's database with `replica` (`litestream restore`): restored beside it first,
 * so a failed restore leaves the old file as it was. The old WAL, index and Litestream's shadow
 * copy go with the old file: they belong to a history the replica replaced. The replica is named
 * in a config of its own (0600), the same settings `litestream replicate` runs with,
 * since a replica URL cannot carry an S3 endpoint in 0.3.13; credentials stay in the environment.
 */
export async function restoreAgentDatabase(
  binary: string,
  dbPath: string,
  source: RestoreSource,
): Promise<void> {
  const { replica, where: prefix, config } = source;
  const temporary = `${dbPath}.restoring`;
  rmSync(temporary, { force: true });
  writeFileSync(config, `${JSON.stringify({ dbs: [{ path: dbPath, replicas: [replica] }] })}\n`, {
    mode: 0o600,
  });
  try {
    const args = ["restore", "-no-expand-env", "-config", config, "-o", temporary, dbPath];
    await run(binary, args, { timeout: 600_000 });
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
  } finally {
    rmSync(config, { force: true });
  }
  for (const file of [`${dbPath}-wal`, `${dbPath}-shm`]) rmSync(file, { force: true });
  rmSync(shadowDir(dbPath), { recursive: true, force: true });
  chmodSync(temporary, 0o600);
  renameSync(temporary, dbPath);
  if (!existsSync(dbPath)) throw new StateError("E_IO", `restore left no database at ${dbPath}`);
}
