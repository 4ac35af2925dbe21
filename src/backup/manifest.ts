import { sep } from "node:path";
import type { DatabaseRole } from "../db/schema.js";

/** The `format` field of every agentstate backup manifest. */
export const BACKUP_FORMAT = "agentstate-backup";
/** Bumped when a reader of the previous version could misread an archive. */
export const BACKUP_FORMAT_VERSION = 1;
/** The manifest is the archive's last entry, so it can carry the hashes of everything before it. */
export const MANIFEST_ENTRY = "manifest.json";
export const DATABASES_DIR = "databases";
export const FILES_DIR = "files";
/**
 * The control plane's dump, when the backup took one. A reader that predates it refuses such an
 * archive (an entry its manifest does not list) rather than misreading it, so the format version
 * stays.
 */
export const CONTROL_PLANE_ENTRY = "control-plane/postgres.sql";
/** Where restore writes the dump, relative to the home, for the operator to load. */
export const CONTROL_PLANE_HOME_PATH = "control-plane.sql";

/**
 * `global` and `agent` are the home's own databases, and `cold-index` an agent's cold index file
 * (`agents/<id>/agent/cold/index.sqlite`, with the agent's id), snapshotted right after its agent;
 * `other` is any further SQLite file found in the home (a legacy sidecar, a plugin's database),
 * snapshotted the same way instead of copied live. A reader that predates `cold-index` refuses a
 * manifest with one rather than misreading it, so the format version stays.
 */
export type SnapshotRole = DatabaseRole | "other";

export interface ManifestDatabase {
  role: SnapshotRole;
  agentId: string | null;
  /** `PRAGMA user_version` of the snapshot. */
  schemaVersion: number;
  /** Absolute path of the live database when the backup was made. */
  sourcePath: string;
  /** Where restore puts the snapshot, relative to the home ("/"-separated). */
  homePath: string;
  /** The snapshot's entry name in the archive: `databases/<homePath>`. */
  snapshotPath: string;
  bytes: number;
  sha256: string;
  /** `"ok"`, or the problems `PRAGMA integrity_check` reported on the snapshot, joined by "; ". */
  integrityCheck: string;
}

export interface ManifestFile {
  /** Where restore puts the file, relative to the home ("/"-separated). */
  homePath: string;
  /** The file's entry name in the archive: `files/<homePath>`. */
  archivePath: string;
  bytes: number;
  sha256: string;
}

/** A path of the home that is deliberately not in the archive, and why. */
export interface ManifestSkip {
  homePath: string;
  reason: string;
}

/** A `pg_dump` of the PostgreSQL control plane: plain SQL, no owners or privileges. */
export interface ManifestControlPlane {
  backend: "postgres";
  /** `user@host:port/database`: never the password. */
  server: string;
  /** As the dump's header names them, e.g. "15.18 (Debian 15.18-0+deb12u1)". */
  serverVersion: string;
  pgDumpVersion: string;
  /** Always `CONTROL_PLANE_HOME_PATH`. */
  homePath: string;
  /** Always `CONTROL_PLANE_ENTRY`. */
  archivePath: string;
  bytes: number;
  sha256: string;
}

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  formatVersion: number;
  backupId: string;
  createdAt: number;
  /** Absolute path of the home that was backed up. */
  home: string;
  databases: ManifestDatabase[];
  files: ManifestFile[];
  skipped: ManifestSkip[];
  /** Present when the backup dumped a PostgreSQL control plane. */
  controlPlane?: ManifestControlPlane;
}

/** A relative OS path as the "/"-separated form used inside archives and manifests. */
export function toArchivePath(relativePath: string): string {
  return relativePath.split(sep).join("/");
}

export function snapshotEntryName(homePath: string): string {
  return `${DATABASES_DIR}/${homePath}`;
}

export function fileEntryName(homePath: string): string {
  return `${FILES_DIR}/${homePath}`;
}

/**
 * Why an archive entry name could not be extracted safely below a directory, or null when it can:
 * it must be relative, "/"-separated, with no empty, `.` or `..` segment and no NUL byte.
 */
export function entryPathProblem(path: string): string | null {
  if (path.length === 0) return "the path is empty";
  if (path.includes("\0")) return "the path contains a NUL byte";
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) return "the path is absolute";
  const segments = path.split("/");
  if (segments.includes("..")) return 'the path has a ".." segment (it would escape the target)';
  if (segments.some((segment) => segment === "" || segment === ".")) {
    return 'the path has an empty or "." segment';
  }
  return null;
}
