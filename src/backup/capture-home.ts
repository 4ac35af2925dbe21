import { rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { Database } from "../db/database.js";
import type { StateHome } from "../home.js";
import type { AgentState } from "../stores/agent/agent-state.js";
import { coldDirOf } from "../stores/agent/cold-files.js";
import type { ColdIndex } from "../stores/agent/cold-index.js";
import { coldArchivesIn, releaseColdArchives, secureColdArchives } from "./cold-archives.js";
import {
  coldIndexClaimsIn,
  coldIndexHomePath,
  describeUncovered,
  uncoveredClaims,
} from "./cold-index-coverage.js";
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
 * it could be secured (a restore committed in between), or its cold index lost rows the snapshot
 * claims (a session deleted, and `gc` run, in between). Each retry needs another such change to
 * land in a window of milliseconds; past this the home is more likely missing the file for good.
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

  global(db: Database): void {
    this.context.onSnapshot(toArchivePath(relative(this.context.home.path, db.path)), 0, 1);
    const file = this.target();
    snapshotDatabase(db, file);
    this.record("global", null, db.path, file);
  }

  agent(agent: AgentState, index: number, total: number): void {
    const { db, agentId } = agent;
    const homePath = toArchivePath(relative(this.context.home.path, db.path));
    this.context.onSnapshot(homePath, index, total);
    const file = this.target();
    const announce = () => this.context.onSnapshot(coldIndexHomePath(homePath), index, total);
    const coldIndex = this.agentSnapshot(agent, homePath, file, announce);
    this.record("agent", agentId, db.path, file);
    if (coldIndex === undefined) return;
    this.record("cold-index", agentId, agent.cold.index.path, coldIndex);
  }

  /**
   * An agent's snapshot together with the cold archives it names, secured right after it: a
   * restore that commits later deletes its archive, and a walk of the home at the end of the backup
   * would then miss a file the snapshot still needs. Then its cold index's snapshot (see
   * coldIndexSnapshot). When an archive is already gone, or the cold index lacks rows the agent
   * snapshot claims, both are taken again (the agent's then holds the restored rows, or no longer
   * the deleted session's claim). Returns the cold index's snapshot, if one is to be archived.
   */
  private agentSnapshot(
    agent: AgentState,
    homePath: string,
    file: string,
    announceColdIndex: () => void,
  ): string | undefined {
    const { db } = agent;
    const { work } = this.context;
    const prefix = `${this.snapshots.length}`;
    const coldFile = join(work, `${prefix}-cold-index.sqlite`);
    for (let attempt = 1; ; attempt++) {
      snapshotDatabase(db, file);
      const refs = coldArchivesIn(file);
      const secured = secureColdArchives(refs, db.path, homePath, work, prefix);
      const announce = attempt === 1 ? announceColdIndex : () => undefined;
      const cold = coldIndexSnapshot(agent.cold.index, file, coldFile, announce);
      if ((secured.missing.length > 0 || cold.problem !== null) && attempt < SNAPSHOT_ATTEMPTS) {
        releaseColdArchives(secured);
        rmSync(file, { force: true });
        rmSync(coldFile, { force: true });
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
      if (cold.problem === null) return cold.taken ? coldFile : undefined;
      rmSync(coldFile, { force: true });
      this.skipped.push({ homePath: coldIndexHomePath(homePath), reason: cold.problem });
      return undefined;
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

/** A cold index's snapshot: whether one was taken, and why it is not to be archived. */
interface ColdIndexSnapshot {
  taken: boolean;
  problem: string | null;
}

/**
 * Snapshots an agent's cold index file, if it has one, into `target`, after the agent's own
 * snapshot: a move commits its rows there before its claim, and rows go only once no claim covers
 * them, so the file holds every row the agent snapshot claims, unless `gc` dropped those of a
 * session deleted in between. That is checked claim by claim. Through the agent's own connection
 * to it (rollback journal): the snapshot's read transaction makes a move in another process wait
 * to commit its rows there, never fail.
 */
function coldIndexSnapshot(
  index: ColdIndex,
  agentSnapshot: string,
  target: string,
  announce: () => void,
): ColdIndexSnapshot {
  const claims = coldIndexClaimsIn(agentSnapshot);
  const db = index.openFile();
  if (db === undefined) {
    if (claims.length === 0) return { taken: false, problem: null };
    const problem = `the agent database claims search rows of ${claims.length} cold sessions in it, but it is missing from the home`;
    return { taken: false, problem };
  }
  announce();
  snapshotDatabase(db, target);
  const uncovered = uncoveredClaims(target, claims);
  if (uncovered.length === 0) return { taken: true, problem: null };
  const problem = `its snapshot ${describeUncovered(uncovered, claims)}, taken ${SNAPSHOT_ATTEMPTS} times with its agent's`;
  return { taken: true, problem };
}

/**
 * Snapshots every database of the home and lists the files to archive. The global database goes
 * first, and the agents to capture are the ones its snapshot registers: the archive then holds
 * exactly the agent databases its own registry names, even while agents are being added.
 */
export function captureHome(context: CaptureContext): HomeCapture {
  const { home } = context;
  const capture = new Capture(context);
  capture.global(home.db);
  const agentIds = registeredAgentIds(capture.snapshots[0]?.file as string);
  const total = 1 + agentIds.length;
  agentIds.forEach((agentId, i) => {
    home.withAgent(agentId, (agent) => capture.agent(agent, i + 1, total), { create: false });
  });
  const agentPaths = home.listAgents().map((agent) => agent.dbPath);
  const live = [home.db.path, ...agentPaths];
  // The cold directories are carried as the snapshots name them (see agentSnapshot), with each
  // cold index as a snapshot of its own: a temp file of a move in progress, the archive of a move
  // that committed after the snapshot, or a live database file copied byte by byte, is not.
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
