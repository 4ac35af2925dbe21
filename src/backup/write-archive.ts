import { statSync } from "node:fs";
import type { HomeCapture, TakenSnapshot } from "./capture-home.js";
import type { ControlPlaneDump } from "./control-plane-dump.js";
import type { BackupProgress } from "./create-backup.js";
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  type BackupManifest,
  CONTROL_PLANE_ENTRY,
  CONTROL_PLANE_HOME_PATH,
  fileEntryName,
  MANIFEST_ENTRY,
  type ManifestControlPlane,
  type ManifestDatabase,
  type ManifestFile,
  type ManifestSkip,
  snapshotEntryName,
} from "./manifest.js";
import { TarWriter, type WrittenEntry } from "./tar-writer.js";

export interface ArchiveMeta {
  id: string;
  createdAt: number;
  home: string;
  gzip: boolean;
  onProgress: (event: BackupProgress) => void;
  controlPlane: ControlPlaneDump | null;
}

/** A file that went away or became unreadable between the listing and the archiving. */
function skippable(error: unknown): string | null {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "vanished during the backup";
  if (code === "EACCES" || code === "EPERM") return `unreadable (${code})`;
  return null;
}

/**
 * The manifest entry of an archived snapshot, once its check has answered. The snapshot is then
 * deleted: instant while the check threads hold it open, and they let go of it when the backup
 * ends, so freeing its pages is not on the backup's path.
 */
async function settleSnapshot(
  taken: TakenSnapshot,
  written: WrittenEntry,
): Promise<ManifestDatabase> {
  const check = await taken.check;
  taken.discard();
  return {
    role: taken.role,
    agentId: taken.agentId,
    schemaVersion: check.schemaVersion ?? 0,
    sourcePath: taken.sourcePath,
    homePath: taken.homePath,
    snapshotPath: written.name,
    bytes: written.bytes,
    sha256: written.sha256,
    integrityCheck: check.integrityCheck,
  };
}

type Progress = (entry: string) => (bytes: number) => void;

/** Archives the home's files; one that vanished or became unreadable since the listing is skipped. */
async function addFiles(writer: TarWriter, capture: HomeCapture, progress: Progress) {
  const files: ManifestFile[] = [];
  const skipped: ManifestSkip[] = [...capture.skipped];
  for (const file of capture.files) {
    try {
      const { name, bytes, sha256 } = await writer.addFile(
        fileEntryName(file.homePath),
        file.path,
        progress(file.homePath),
      );
      files.push({ homePath: file.homePath, archivePath: name, bytes, sha256 });
    } catch (error) {
      const reason = skippable(error);
      if (reason === null) throw error;
      skipped.push({ homePath: file.homePath, reason });
    }
  }
  return { files, skipped };
}

async function addDump(
  writer: TarWriter,
  dump: ControlPlaneDump,
  progress: Progress,
): Promise<ManifestControlPlane> {
  const written = await writer.addFile(
    CONTROL_PLANE_ENTRY,
    dump.file,
    progress(CONTROL_PLANE_ENTRY),
  );
  return {
    backend: "postgres",
    server: dump.server,
    serverVersion: dump.serverVersion,
    pgDumpVersion: dump.pgDumpVersion,
    homePath: CONTROL_PLANE_HOME_PATH,
    archivePath: written.name,
    bytes: written.bytes,
    sha256: written.sha256,
  };
}

async function writeEntries(writer: TarWriter, capture: HomeCapture, meta: ArchiveMeta) {
  const dump = meta.controlPlane;
  const total =
    capture.snapshots.reduce((sum, taken) => sum + statSync(taken.file).size, 0) +
    capture.files.reduce((sum, file) => sum + file.bytes, 0) +
    (dump ? statSync(dump.file).size : 0);
  let done = 0;
  const progress: Progress = (entry) => (bytes) => {
    done += bytes;
    meta.onProgress({ phase: "archive", entry, done, total });
  };
  const databases: Promise<ManifestDatabase>[] = [];
  for (const taken of capture.snapshots) {
    const name = snapshotEntryName(taken.homePath);
    const written = await writer.addFile(name, taken.file, progress(taken.homePath));
    databases.push(settleSnapshot(taken, written));
  }
  const { files, skipped } = await addFiles(writer, capture, progress);
  const controlPlane = dump ? await addDump(writer, dump, progress) : null;
  await writer.flushEarly();
  return { databases: await Promise.all(databases), files, skipped, controlPlane };
}

/**
 * Writes the archive at `path`: the snapshots, then the files, then the control plane's dump if
 * any, then the manifest describing them, last, so that it can hold the hash of every body read on the way.
 */
export async function writeArchive(
  path: string,
  capture: HomeCapture,
  meta: ArchiveMeta,
): Promise<BackupManifest> {
  const writer = TarWriter.create(path, { gzip: meta.gzip });
  try {
    const { databases, files, skipped, controlPlane } = await writeEntries(writer, capture, meta);
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      formatVersion: BACKUP_FORMAT_VERSION,
      backupId: meta.id,
      createdAt: meta.createdAt,
      home: meta.home,
      databases,
      files,
      skipped,
      ...(controlPlane ? { controlPlane } : {}),
    };
    const text = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    await writer.addBuffer(MANIFEST_ENTRY, text, new Date(meta.createdAt));
    await writer.finish();
    return manifest;
  } catch (error) {
    writer.abort();
    throw error;
  }
}
