import { copyFileSync, linkSync, rmSync } from "node:fs";
import { basename, join, posix } from "node:path";
import type { SqlDriver } from "../db/driver.js";
import { chooseDriver, driverFactory } from "../db/driver-choice.js";
import { coldDirOf } from "../stores/agent/cold-files.js";

/** A cold session's archive, as an agent database's `cold_sessions` row names it. */
export interface ColdArchiveRef {
  /** The row's `archive_path` (relative to the home the database was in). */
  archivePath: string;
  /** SHA-256 of the whole archive file. */
  sha256: string;
}

/** The archives an agent database's cold rows name, or null when it has no cold storage. */
export function readColdArchives(driver: SqlDriver): ColdArchiveRef[] | null {
  const table = driver
    .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'cold_sessions'")
    .get();
  if (!table) return null;
  return driver
    .prepare<ColdArchiveRef>(
      "SELECT archive_path AS archivePath, sha256 FROM cold_sessions ORDER BY session_no",
    )
    .all();
}

/** `readColdArchives` of a snapshot file. */
export function coldArchivesIn(snapshot: string): ColdArchiveRef[] {
  const driver = driverFactory(chooseDriver())(snapshot, { readonly: true, fileMustExist: true });
  try {
    return readColdArchives(driver) ?? [];
  } finally {
    driver.close();
  }
}

/**
 * Where a cold archive sits in a backup, relative to the home: in the cold directory beside the
 * agent database at `agentHomePath`. A reader resolves only the file name there (see
 * coldDirOf), so the row's own path, written in whatever home the database was in, is not used.
 */
export function coldArchiveHomePath(agentHomePath: string, ref: ColdArchiveRef): string {
  const name = posix.basename(ref.archivePath.replaceAll("\\", "/"));
  return posix.join(posix.dirname(agentHomePath), "cold", name);
}

export interface SecuredArchives {
  /** Each named archive's private copy, by its home path. */
  copies: { homePath: string; path: string }[];
  /** The home paths of the archives that were gone. */
  missing: string[];
}

/**
 * Keeps a private copy of each archive a snapshot names, in `work`. A hard link is instant and
 * keeps the file's bytes even when a restore deletes the archive a moment later; across
 * filesystems the bytes are copied. An archive file is never rewritten in place (each move writes
 * a new name), so a link is a copy.
 */
export function secureColdArchives(
  refs: readonly ColdArchiveRef[],
  agentDbPath: string,
  agentHomePath: string,
  work: string,
  prefix: string,
): SecuredArchives {
  const secured: SecuredArchives = { copies: [], missing: [] };
  refs.forEach((ref, i) => {
    const homePath = coldArchiveHomePath(agentHomePath, ref);
    const source = join(coldDirOf(agentDbPath), basename(homePath));
    const target = join(work, `${prefix}-cold-${i}`);
    try {
      keepCopy(source, target);
      secured.copies.push({ homePath, path: target });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      secured.missing.push(homePath);
    }
  });
  return secured;
}

function keepCopy(source: string, target: string): void {
  try {
    linkSync(source, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EXDEV" && code !== "EPERM" && code !== "EMLINK") throw error;
    copyFileSync(source, target);
  }
}

/** Removes the copies `secureColdArchives` made. */
export function releaseColdArchives(secured: SecuredArchives): void {
  for (const copy of secured.copies) rmSync(copy.path, { force: true });
}
