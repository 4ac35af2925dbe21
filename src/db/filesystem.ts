import { existsSync, statfsSync } from "node:fs";
import { dirname } from "node:path";
import { StateError } from "./errors.js";

/**
 * How a database keeps its journal. `wal` (the default) lets readers run beside a writer; it needs
 * shared memory (the -shm file, mapped by every connection) and POSIX locks that behave, which
 * network and layered filesystems do not give. `rollback` (`journal_mode=DELETE`) works there, at
 * the cost of a writer blocking every reader for the length of its transaction.
 */
export type JournalMode = "wal" | "rollback";

export const JOURNAL_MODE_ENV = "AGENTSTATE_JOURNAL_MODE";

/**
 * Filesystems whose `statfs` magic number says WAL is unsafe there: SQLite's own documentation
 * rules out network filesystems for WAL, and the layered or virtualized ones (Docker Desktop's
 * overlayfs and virtiofs, 9p, FUSE) share the -shm mapping or byte-range locks between host and
 * guest no better. ext4, xfs, btrfs, zfs and tmpfs are not listed: they are safe.
 */
export const WAL_UNSAFE_FILESYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x6969, "NFS"],
  [0x517b, "SMB"],
  [0xff534d42, "CIFS"],
  [0xfe534d42, "SMB2"],
  [0x794c7630, "overlayfs"],
  [0x6a656a63, "virtiofs"],
  [0x01021997, "9p"],
  [0x65735546, "FUSE"],
]);

/** The unsafe filesystem a `statfs` type names, or null where WAL is safe (or the type unknown). */
export function walUnsafeFilesystem(type: number | null): string | null {
  return type === null ? null : (WAL_UNSAFE_FILESYSTEMS.get(type) ?? null);
}

/**
 * Refuses WAL in `dir` when its filesystem (`type`, from `statfs`) is one where WAL corrupts
 * databases, naming the way out. Takes the type rather than probing, so each case can be checked.
 */
export function assertWalSafe(dir: string, type: number | null): void {
  const name = walUnsafeFilesystem(type);
  if (name === null) return;
  throw new StateError(
    "E_UNSAFE_FILESYSTEM",
    `${dir} is on ${name}, where SQLite's WAL journal corrupts databases (its shared-memory file and locks are not reliable there); put the home on a local disk, or choose the rollback journal with ${JOURNAL_MODE_ENV}=delete (library: journalMode: "rollback"), where a writer blocks readers while it commits`,
    { details: { path: dir, filesystem: name, type } },
  );
}

const probed = new Map<string, number | null>();

function statfsType(dir: string): number | null {
  // A directory about to be created lies on its nearest existing ancestor's filesystem.
  for (let at = dir; ; at = dirname(at)) {
    try {
      return Number(statfsSync(at).type);
    } catch {
      if (dirname(at) === at) return null;
    }
  }
}

/**
 * The `statfs` type of a directory, asked once per directory per process: a home opens the same
 * few directories over and over. Null where the platform cannot say.
 */
export function filesystemTypeOf(dir: string): number | null {
  const known = probed.get(dir);
  if (known !== undefined) return known;
  const type = statfsType(dir);
  // Only an existing directory's answer is kept: a mount may yet appear at a missing one.
  if (existsSync(dir)) probed.set(dir, type);
  return type;
}

/** The journal mode an option asks for, else the environment's, else `wal`. */
export function resolveJournalMode(
  option: JournalMode | undefined,
  env: NodeJS.ProcessEnv = process.env,
): JournalMode {
  if (option !== undefined) {
    if (option !== "wal" && option !== "rollback") {
      throw new TypeError(`Expected journalMode to be "wal" or "rollback", got ${String(option)}`);
    }
    return option;
  }
  const text = env[JOURNAL_MODE_ENV]?.trim().toLowerCase();
  if (text === undefined || text === "") return "wal";
  if (text === "wal") return "wal";
  if (text === "delete" || text === "rollback") return "rollback";
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `${JOURNAL_MODE_ENV} must be "wal" or "delete", got ${JSON.stringify(env[JOURNAL_MODE_ENV])}`,
  );
}
