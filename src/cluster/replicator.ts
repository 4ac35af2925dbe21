import { closeSync, mkdirSync, openSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type SupervisedLitestream,
  stopSupervised,
  superviseLitestream,
} from "./litestream-supervisor.js";
import type { LitestreamReplica } from "./replica-store.js";

/** Litestream's log past which a (re)start moves it to `litestream.log.1`. */
export const LITESTREAM_LOG_LIMIT_BYTES = 8 * 1024 * 1024;

/** One database Litestream ships, and where its replica goes (Litestream's replica settings). */
export interface ReplicatedDatabase {
  path: string;
  replica: LitestreamReplica;
}

/**
 * The host's one Litestream process (`litestream replicate`), over the databases of the agents
 * the host owns. Litestream 0.3.13 has no reload (a SIGHUP leaves it on its old config), so a
 * change of the set writes a new config and restarts the process; changes made meanwhile are
 * folded into one restart. The process follows its host: it stops (after a final sync) when the
 * host exits, however it exits (see litestream-supervisor.ts).
 */
export class Replicator {
  private readonly databases = new Map<string, ReplicatedDatabase>();
  private running: SupervisedLitestream | undefined;
  private chain: Promise<void> = Promise.resolve();
  private pending = false;

  constructor(
    private readonly binary: string,
    /** Litestream's config and log (and the restores' configs), 0700. */
    readonly dir: string,
    private readonly syncIntervalMs: number,
    private readonly logLimitBytes = LITESTREAM_LOG_LIMIT_BYTES,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** The running Litestream's own process id (not its supervisor's), if one runs. */
  get pid(): number | undefined {
    return this.running?.pid;
  }

  get size(): number {
    return this.databases.size;
  }

  /** Adds (or moves) a database; resolves once Litestream runs with it. */
  set(key: string, database: ReplicatedDatabase): Promise<void> {
    this.databases.set(key, database);
    return this.restart();
  }

  /** Stops shipping a database; resolves once Litestream runs without it. */
  delete(key: string): Promise<void> {
    if (!this.databases.delete(key)) return this.chain;
    return this.restart();
  }

  /** Stops Litestream (a final sync of each database first, as Litestream does on SIGTERM). */
  async close(): Promise<void> {
    this.databases.clear();
    await this.restart();
  }

  private restart(): Promise<void> {
    if (this.pending) return this.chain;
    this.pending = true;
    this.chain = this.chain.then(async () => {
      this.pending = false;
      await this.stop();
      if (this.databases.size > 0) await this.start();
    });
    return this.chain;
  }

  private async start(): Promise<void> {
    const config = join(this.dir, "litestream.yml");
    const interval = `${this.syncIntervalMs}ms`;
    // JSON is YAML: no YAML writer needed, and paths are quoted whatever they hold.
    const dbs = [...this.databases.values()].map((db) => ({
      path: db.path,
      replicas: [{ ...db.replica, "sync-interval": interval }],
    }));
    writeFileSync(config, `${JSON.stringify({ dbs }, null, 2)}\n`, { mode: 0o600 });
    const logPath = join(this.dir, "litestream.log");
    rotateLog(logPath, this.logLimitBytes);
    const log = openSync(logPath, "a", 0o600);
    try {
      const args = ["replicate", "-no-expand-env", "-config", config];
      this.running = await superviseLitestream(this.binary, args, log);
    } finally {
      closeSync(log);
    }
  }

  private async stop(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    if (running) await stopSupervised(running, 5_000);
  }
}

/**
 * Keeps one older log: the log is opened in append mode on every restart (each change of the
 * owned set is one), so without a bound it would grow for as long as the host runs.
 */
function rotateLog(path: string, limitBytes: number): void {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    return; // No log yet.
  }
  if (size > limitBytes) renameSync(path, `${path}.1`);
}
