import { rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { Database } from "../db/database.js";
import type { StateHome } from "../home.js";
import { coldDirOf } from "../stores/agent/cold-files.js";
import { coldArchivesIn, releaseColdArchives, secureColdArchives } from "./cold-archives.js";
import { type HomeFile, inventoryHome } from "./home-files.js";
import { type ManifestSkip, type SnapshotRole, toArchivePath } from "./manifest.js";
import { registeredAgentIds, snapshotDatabase, snapshotForeignDatabase } from "./snapshot.js";
import type { SnapshotCheck, SnapshotChecker } from "./snapshot-check.js";

export interface TakenSnapshot {
  role: SnapshotRole;
  agentId: string | null;
  sourcePath: string;
  homePath: string;
  /** The snapshot file in the private work directory. */
  file: string;
  /** Its `integrity_check`, running while the archive is written. */
  check: Promise<SnapshotCheck>;
  /** Deletes `file`: to be called once it is archived and `check` has answered. */
  discard: () => void;
}

export interface HomeCapture {
  snapshots: TakenSnapshot[];
  files: HomeFile[];
  skipped: ManifestSkip[];
}

export interface CaptureContext {
  home: StateHome;
  /** Private directory for the snapshots. */
  work: string;
  /** Paths the home walk must not enter (the backup's own output and work directory). */
  exclude: readonly string[];
  checker: SnapshotChecker;
  /** Called just before each database's snapshot begins. */
  onSnapshot: (homePath: string, index: number, total: number) => void;
}

/**
 * How often an agent is snapshotted again when a cold archive its snapshot names was deleted before
 * it could be secured (a restore committed in between). Each retry needs another restore to land
 * in a window of milliseconds; past this the home is more likely missing the file for good.
 */
const SNAPSHOT_ATTEMPTS = 3;

function withSidecars(path: string): string[] {
  return [path, `${path}-wal`, `${path}-shm`, `${path}-journal`];
}

class Capture {
  readonly snapshots: TakenSnapshot[] = [];
  /** The cold archives the agent snapshots name, as private copies taken with each snapshot. */
  readonly coldFiles: HomeFile[] = [];
  readonly skipped: ManifestSkip[] = [];

  constructor(private readonly context: CaptureContext) {}

  private target(): string {
    return join(this.context.work, `${this.snapshots.length}.sqlite`);
  }

  private record(role: SnapshotRole, agentId: string | null, source: string, file: string): void {
    const homePath = toArchivePath(relative(this.context.home.path, source));
    const { checker } = this.context;
    const check = checker.check(file, { hold: true });
    const discard = () => checker.discard(file);
    this.snapshots.push({ role, agentId, sourcePath: source, homePath, file, check, discard });
  }

  home(db: Database, agentId: string | null, index: number, total: number): void {
    const homePath = toArchivePath(relative(this.context.home.path, db.path));
    this.context.onSnapshot(homePath, index, total);
    const file = this.target();
    if (agentId === null) snapshotDatabase(db, file);
    else this.agentSnapshot(db, homePath, file);
    this.record(agentId === null ? "global" : "agent", agentId, db.path, file);
  }

  /**
   * An agent's snapshot together with the cold archives it names, secured right after it: a
   * restore that commits later deletes its archive, and a walk of the home at the end of the backup
   * would then miss a file the snapshot still needs. When one is already gone, the snapshot is
   * taken again (it then holds the restored rows instead).
   */
  private agentSnapshot(db: Database, homePath: string, file: string): void {
    const { work } = this.context;
    for (let attempt = 1; ; attempt++) {
      snapshotDatabase(db, file);
      const refs = coldArchivesIn(file);
      const secured = secureColdArchives(refs, db.path, homePath, work, `${this.snapshots.length}`);
      if (secured.missing.length > 0 && attempt < SNAPSHOT_ATTEMPTS) {
        releaseColdArchives(secured);
        rmSync(file, { force: true });
        continue;
      }
      for (const copy of secured.copies) {
        this.coldFiles.push({ ...copy, bytes: statSync(copy.path).size });
      }
      for (const missing of secured.missing) {
        this.skipped.push({
          homePath: missing,
          reason: "the cold archive its agent database names is missing from the home",
        });
      }
      return;
    }
  }

  foreign(source: HomeFile, index: number, total: number): ManifestSkip | null {
    this.context.onSnapshot(source.homePath, index, total);
    const file = this.target();
    try {
      snapshotForeignDatabase(source.path, file);
    } catch (error) {
      // One unreadable stray database must not cost the operator the whole backup; it is reported.
      return {
        homePath: source.homePath,
        reason: `could not be snapshotted: ${(error as Error).message}`,
      };
    }
    this.record("other", null, source.path, file);
    return null;
  }
}

/**
 * Snapshots every database of the home and lists the files to archive. The global database goes
 * first, and the agents to capture are the ones its snapshot registers: the archive then holds
 * exactly the agent databases its own registry names, even while agents are being added.
 */
export function captureHome(context: CaptureContext): HomeCapture {
  const { home } = context;
  const capture = new Capture(context);
  capture.home(home.db, null, 0, 1);
  const agentIds = registeredAgentIds(capture.snapshots[0]?.file as string);
  const total = 1 + agentIds.length;
  agentIds.forEach((agentId, i) => {
    home.withAgent(agentId, ({ db }) => capture.home(db, agentId, i + 1, total), { create: false });
  });
  const agentPaths = home.listAgents().map((agent) => agent.dbPath);
  const live = [home.db.path, ...agentPaths];
  // The cold directories are carried as the snapshots name them (see agentSnapshot): a temp file
  // of a move in progress, or the archive of a move that committed after the snapshot, is not.
  const exclude = new Set([
    ...context.exclude,
    ...live.flatMap(withSidecars),
    ...agentPaths.map(coldDirOf),
  ]);
  const inventory = inventoryHome(home.path, exclude);
  const skipped = [...capture.skipped, ...inventory.skipped];
  inventory.databases.forEach((source, i) => {
    const skip = capture.foreign(source, total + i, total + inventory.databases.length);
    if (skip) skipped.push(skip);
  });
  const files = [...capture.coldFiles, ...inventory.files];
  return { snapshots: capture.snapshots, files, skipped };
}
