import type { Database } from "../db/database.js";
import type { StateHome } from "../home.js";

export const DEFAULT_POLL_MS = 250;

type Listener = () => void;

interface Watch {
  db: Database;
  /** Lets go of the agent's pin: a watched agent stays open, however many others are opened. */
  release: () => void;
  version: unknown;
  listeners: Set<Listener>;
  timer: NodeJS.Timeout;
}

/**
 * Tells subscribers when an agent's database changed. `PRAGMA data_version` on the server's own
 * connection moves whenever another connection (a gateway process, a worker, the CLI) commits;
 * reading it costs no I/O, so each watched agent is polled every `pollMs` while anyone listens,
 * and not at all otherwise. The server's own writes do not move it: routes call `notify`.
 */
export class ChangeHub {
  private readonly watches = new Map<string, Watch>();

  constructor(
    private readonly home: StateHome,
    private readonly pollMs = DEFAULT_POLL_MS,
  ) {}

  /** Calls `listener` after each change to the agent's database; returns the unsubscribe. */
  subscribe(agentId: string, listener: Listener): () => void {
    const watch = this.watches.get(agentId) ?? this.start(agentId);
    watch.listeners.add(listener);
    return () => {
      watch.listeners.delete(listener);
      if (watch.listeners.size === 0) this.stop(agentId, watch);
    };
  }

  /** Wakes the agent's subscribers now (after a write made through this server's connection). */
  notify(agentId: string): void {
    const watch = this.watches.get(agentId);
    if (watch) this.emit(watch);
  }

  /** Stops every poll; subscribers hear nothing more. */
  close(): void {
    for (const [agentId, watch] of this.watches) this.stop(agentId, watch);
  }

  get watchedAgents(): number {
    return this.watches.size;
  }

  private start(agentId: string): Watch {
    const { agent, release } = this.home.pinAgent(agentId, { create: false });
    const { db } = agent;
    const watch: Watch = {
      db,
      release,
      version: db.pragma("data_version"),
      listeners: new Set(),
      timer: setInterval(() => this.poll(agentId, watch), this.pollMs),
    };
    // A dashboard left open must not keep a closing process alive.
    watch.timer.unref();
    this.watches.set(agentId, watch);
    return watch;
  }

  private stop(agentId: string, watch: Watch): void {
    clearInterval(watch.timer);
    watch.release();
    if (this.watches.get(agentId) === watch) this.watches.delete(agentId);
  }

  private poll(agentId: string, watch: Watch): void {
    let version: unknown;
    try {
      version = watch.db.pragma("data_version");
    } catch {
      // The home was closed under us: nothing more will change.
      this.stop(agentId, watch);
      return;
    }
    if (version === watch.version) return;
    watch.version = version;
    this.emit(watch);
  }

  private emit(watch: Watch): void {
    for (const listener of [...watch.listeners]) listener();
  }
}
