import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** One database Litestream ships, and the directory its replica goes to. */
export interface ReplicatedDatabase {
  path: string;
  replica: string;
}

/**
 * The host's one Litestream process (`litestream replicate`), over the databases of the agents
 * the host owns. Litestream 0.3.13 has no reload (a SIGHUP leaves it on its old config), so a
 * change of the set writes a new config and restarts the process; changes made meanwhile are
 * folded into one restart.
 */
export class Replicator {
  private readonly databases = new Map<string, ReplicatedDatabase>();
  private child: ChildProcess | undefined;
  private chain: Promise<void> = Promise.resolve();
  private pending = false;
  private readonly killAtExit = () => this.child?.kill("SIGKILL");

  constructor(
    private readonly binary: string,
    private readonly dir: string,
    private readonly syncIntervalMs: number,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    process.once("exit", this.killAtExit);
  }

  /** The running Litestream's process id, if one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
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
    process.off("exit", this.killAtExit);
  }

  private restart(): Promise<void> {
    if (this.pending) return this.chain;
    this.pending = true;
    this.chain = this.chain.then(async () => {
      this.pending = false;
      await this.stop();
      if (this.databases.size > 0) this.start();
    });
    return this.chain;
  }

  private start(): void {
    const config = join(this.dir, "litestream.yml");
    const interval = `${this.syncIntervalMs}ms`;
    // JSON is YAML: no YAML writer needed, and paths are quoted whatever they hold.
    const dbs = [...this.databases.values()].map((db) => ({
      path: db.path,
      replicas: [{ type: "file", path: db.replica, "sync-interval": interval }],
    }));
    writeFileSync(config, `${JSON.stringify({ dbs }, null, 2)}\n`, { mode: 0o600 });
    const log = openSync(join(this.dir, "litestream.log"), "a", 0o600);
    try {
      this.child = spawn(this.binary, ["replicate", "-no-expand-env", "-config", config], {
        stdio: ["ignore", log, log],
      });
    } finally {
      closeSync(log);
    }
    this.child.on("error", () => {}); // A spawn failure shows as an exit; durable() then waits.
  }

  private async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
