import { statSync } from "node:fs";
import { rejectUnknownOptions } from "../db/options.js";
import { openStateHome, StateHome } from "../home.js";
import type { BackupRunStatus } from "../stores/global/backup-run-store.js";

export interface BackupRunSummary {
  id: string;
  createdAt: number;
  archive: string;
  status: BackupRunStatus;
  /** Whether the archive is still at its recorded path. */
  archiveExists: boolean;
  /** The archive's size on disk, when it is there. */
  bytes: number | null;
  /** From the manifest of a succeeded run; null otherwise. */
  databases: number | null;
  files: number | null;
  /** The failure of a failed run; null otherwise. */
  error: string | null;
}

export interface ListBackupsOptions {
  /** At most this many runs, newest first (default 100). */
  limit?: number;
}

/** An archive's size on disk, or null when it is gone (or not a file). */
export function archiveSize(path: string): number | null {
  try {
    const stat = statSync(path);
    return stat.isFile() ? stat.size : null;
  } catch {
    return null;
  }
}

function count(value: unknown): number | null {
  return Array.isArray(value) ? value.length : null;
}

function errorOf(manifest: Record<string, unknown>): string | null {
  const error = manifest.error as { message?: unknown } | undefined;
  return typeof error?.message === "string" ? error.message : null;
}

/** The backup runs recorded in the home's `backup_runs`, newest first. */
export function listBackups(
  home: StateHome | string,
  options: ListBackupsOptions = {},
): BackupRunSummary[] {
  rejectUnknownOptions(options, ["limit"], "listBackups");
  if (typeof home !== "string" && !(home instanceof StateHome)) {
    throw new TypeError("Expected listBackups(home) to be a StateHome or a home path");
  }
  // Listing takes no write lock: it must answer beside a live gateway.
  const owned = typeof home === "string" ? openStateHome({ home, readonly: true }) : null;
  try {
    const runs = (owned ?? (home as StateHome)).backups.list(options.limit ?? 100);
    return runs.map((run) => {
      const bytes = archiveSize(run.archivePath);
      return {
        id: run.id,
        createdAt: run.createdAt,
        archive: run.archivePath,
        status: run.status,
        archiveExists: bytes !== null,
        bytes,
        databases: run.status === "succeeded" ? count(run.manifest.databases) : null,
        files: run.status === "succeeded" ? count(run.manifest.files) : null,
        error: errorOf(run.manifest),
      };
    });
  } finally {
    owned?.close();
  }
}
