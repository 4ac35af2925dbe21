import { StateError } from "../db/errors.js";
import { RESTORE_WORK_DIR } from "../db/pending-restore.js";
import { agentDbRelativePath, GLOBAL_DB_RELATIVE_PATH } from "../home.js";
import { validateAgentId } from "../ids.js";
import { coldIndexHomePath } from "./cold-index-coverage.js";
import { BACKUPS_DIR } from "./home-files.js";
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  type BackupManifest,
  CONTROL_PLANE_ENTRY,
  CONTROL_PLANE_HOME_PATH,
  entryPathProblem,
  fileEntryName,
  type ManifestControlPlane,
  type ManifestDatabase,
  type ManifestFile,
  type ManifestSkip,
  snapshotEntryName,
  toArchivePath,
} from "./manifest.js";

type Fields = Record<string, unknown>;

function invalid(message: string): StateError {
  return new StateError("E_CORRUPT", `manifest.json is not valid: ${message}`);
}

function object(value: unknown, where: string): Fields {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(`${where} must be an object`);
  }
  return value as Fields;
}

function string(fields: Fields, key: string, where: string): string {
  const value = fields[key];
  if (typeof value !== "string" || value === "") {
    throw invalid(`${where}.${key} must be a non-empty string`);
  }
  return value;
}

function count(fields: Fields, key: string, where: string): number {
  const value = fields[key];
  if (!Number.isSafeInteger(value) || (value as number) < 0) {
    throw invalid(`${where}.${key} must be a non-negative integer`);
  }
  return value as number;
}

function sha256(fields: Fields, where: string): string {
  const value = string(fields, "sha256", where);
  if (!/^[0-9a-f]{64}$/.test(value)) throw invalid(`${where}.sha256 must be 64 hex digits`);
  return value;
}

/** Backups never carry `backups/` or a restore's work directory; restoring into them would clash. */
function reservedProblem(path: string): string | null {
  const top = path.split("/")[0];
  return top === BACKUPS_DIR || top === RESTORE_WORK_DIR
    ? `the path is inside ${top}/, which a backup never carries`
    : null;
}

function homePath(fields: Fields, where: string): string {
  const value = string(fields, "homePath", where);
  const problem = entryPathProblem(value) ?? reservedProblem(value);
  if (problem) throw invalid(`${where}.homePath ${JSON.stringify(value)}: ${problem}`);
  return value;
}

function list(fields: Fields, key: string): unknown[] {
  const value = fields[key];
  if (!Array.isArray(value)) throw invalid(`${key} must be an array`);
  return value;
}

/** The home path a database of this role must restore to, so an archive cannot misplace one. */
function expectedDbPath(role: ManifestDatabase["role"], agentId: string | null): string | null {
  if (role === "global") return toArchivePath(GLOBAL_DB_RELATIVE_PATH);
  const agentPath = agentId === null ? null : toArchivePath(agentDbRelativePath(agentId));
  if (role === "agent") return agentPath;
  if (role === "cold-index") return coldIndexHomePath(agentPath as string);
  return null;
}

const ROLES: readonly string[] = ["global", "agent", "cold-index", "other"];
/** The roles that belong to one agent, and name it. */
const AGENT_ROLES: readonly string[] = ["agent", "cold-index"];

function parseDatabase(value: unknown, index: number): ManifestDatabase {
  const where = `databases[${index}]`;
  const fields = object(value, where);
  const role = fields.role as ManifestDatabase["role"];
  if (!ROLES.includes(role)) {
    throw invalid(`${where}.role must be one of ${ROLES.map((r) => `"${r}"`).join(", ")}`);
  }
  let agentId: string | null = null;
  if (AGENT_ROLES.includes(role)) {
    try {
      agentId = validateAgentId(fields.agentId);
    } catch (error) {
      throw invalid(`${where}.agentId: ${(error as Error).message}`);
    }
  } else if (fields.agentId !== null) {
    throw invalid(`${where}.agentId must be null for role "${role}"`);
  }
  const path = homePath(fields, where);
  const expected = expectedDbPath(role, agentId);
  if (expected !== null && path !== expected) {
    throw invalid(`${where}.homePath must be ${JSON.stringify(expected)} for its role`);
  }
  const snapshotPath = string(fields, "snapshotPath", where);
  if (snapshotPath !== snapshotEntryName(path)) {
    throw invalid(`${where}.snapshotPath must be ${JSON.stringify(snapshotEntryName(path))}`);
  }
  return {
    role,
    agentId,
    schemaVersion: count(fields, "schemaVersion", where),
    sourcePath: string(fields, "sourcePath", where),
    homePath: path,
    snapshotPath,
    bytes: count(fields, "bytes", where),
    sha256: sha256(fields, where),
    integrityCheck: string(fields, "integrityCheck", where),
  };
}

function parseFile(value: unknown, index: number): ManifestFile {
  const where = `files[${index}]`;
  const fields = object(value, where);
  const path = homePath(fields, where);
  const archivePath = string(fields, "archivePath", where);
  if (archivePath !== fileEntryName(path)) {
    throw invalid(`${where}.archivePath must be ${JSON.stringify(fileEntryName(path))}`);
  }
  return {
    homePath: path,
    archivePath,
    bytes: count(fields, "bytes", where),
    sha256: sha256(fields, where),
  };
}

function parseSkip(value: unknown, index: number): ManifestSkip {
  const where = `skipped[${index}]`;
  const fields = object(value, where);
  return { homePath: string(fields, "homePath", where), reason: string(fields, "reason", where) };
}

/** Its paths are fixed: an archive cannot make restore write the dump anywhere else. */
function parseControlPlane(value: unknown): ManifestControlPlane | undefined {
  if (value === undefined) return undefined;
  const where = "controlPlane";
  const fields = object(value, where);
  if (fields.backend !== "postgres") throw invalid(`${where}.backend must be "postgres"`);
  const fixed = (key: string, want: string) => {
    if (fields[key] !== want) throw invalid(`${where}.${key} must be ${JSON.stringify(want)}`);
    return want;
  };
  return {
    backend: "postgres",
    server: string(fields, "server", where),
    serverVersion: string(fields, "serverVersion", where),
    pgDumpVersion: string(fields, "pgDumpVersion", where),
    homePath: fixed("homePath", CONTROL_PLANE_HOME_PATH),
    archivePath: fixed("archivePath", CONTROL_PLANE_ENTRY),
    bytes: count(fields, "bytes", where),
    sha256: sha256(fields, where),
  };
}

function checkUnique(manifest: BackupManifest): void {
  const taken = new Set<string>();
  const claim = (path: string): void => {
    if (taken.has(path)) throw invalid(`home path ${JSON.stringify(path)} is listed twice`);
    taken.add(path);
  };
  // A database claims its sidecars too: a file restored as its WAL would be replayed into it.
  for (const db of manifest.databases) {
    for (const suffix of ["", "-wal", "-shm", "-journal"]) claim(`${db.homePath}${suffix}`);
  }
  for (const file of manifest.files) claim(file.homePath);
  if (manifest.controlPlane) claim(manifest.controlPlane.homePath);
  if (manifest.databases.filter((db) => db.role === "global").length !== 1) {
    throw invalid("it must list exactly one global database");
  }
}

/**
 * Parses and checks a manifest: every field typed, every path safe and consistent with its
 * archive entry and role. Throws `E_CORRUPT` naming the first field at fault.
 */
export function parseManifest(text: string): BackupManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw invalid(`not JSON (${(error as Error).message})`);
  }
  const fields = object(raw, "the manifest");
  if (fields.format !== BACKUP_FORMAT) throw invalid(`format must be "${BACKUP_FORMAT}"`);
  const version = count(fields, "formatVersion", "the manifest");
  if (version > BACKUP_FORMAT_VERSION) {
    throw invalid(
      `format version ${version} is newer than this agentstate reads (${BACKUP_FORMAT_VERSION}); upgrade agentstate`,
    );
  }
  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    formatVersion: version,
    backupId: string(fields, "backupId", "the manifest"),
    createdAt: count(fields, "createdAt", "the manifest"),
    home: string(fields, "home", "the manifest"),
    databases: list(fields, "databases").map(parseDatabase),
    files: list(fields, "files").map(parseFile),
    skipped: list(fields, "skipped").map(parseSkip),
  };
  const controlPlane = parseControlPlane(fields.controlPlane);
  if (controlPlane) manifest.controlPlane = controlPlane;
  checkUnique(manifest);
  return manifest;
}
