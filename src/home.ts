import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  AgentPool,
  type AgentPoolStats,
  checkMaxOpenAgents,
  DEFAULT_MAX_OPEN_AGENTS,
  evictedMessage,
  releasedAfter,
} from "./agent-pool.js";
import { NEEDS_UPGRADE, readBare } from "./agent-reader.js";
import { type BareSearchOutcome, processSearchThreads } from "./agent-search-threads.js";
import { InputsApi } from "./api/inputs-api.js";
import { MaintenanceApi } from "./api/maintenance-api.js";
import { MemoryApi } from "./api/memory-api.js";
import { SessionsApi } from "./api/sessions-api.js";
import { TranscriptsApi } from "./api/transcripts-api.js";
import { UsageApi } from "./api/usage-api.js";
import { processCheckpointer } from "./db/checkpointer.js";
import { resolveCheckpoints } from "./db/checkpoints.js";
import { type Database, openDatabase } from "./db/database.js";
import { chooseDriver } from "./db/driver-choice.js";
import { StateError } from "./db/errors.js";
import { rejectUnknownOptions } from "./db/options.js";
import { settlePendingRestore } from "./db/pending-restore.js";
import { finishAgentOpen, openHomeDatabase } from "./home-database.js";
import {
  AGENT_OPTION_KEYS,
  HOME_OPTION_KEYS,
  type HomeDatabaseOptions,
  type OpenStateHomeOptions,
} from "./home-options.js";
import { agentDbRelativePath, GLOBAL_DB_RELATIVE_PATH, resolveHomePath } from "./home-paths.js";
import { loadRetention } from "./maintenance/policy.js";
import type {
  AgentOpenOptions,
  AgentPin,
  AgentReader,
  AgentSource,
  AgentState,
} from "./stores/agent/agent-state.js";
import { defineAgentStores } from "./stores/agent/agent-stores.js";
import type { SearchHit, SearchOptions } from "./stores/agent/transcript-search.js";
import type { AgentRecord } from "./stores/global/agent-registry-rows.js";
import { AgentRegistryStore } from "./stores/global/agent-registry-store.js";
import { type SweepReport, sweepExpired } from "./stores/global/expiry.js";
import { GlobalStores } from "./stores/global/global-stores.js";
import {
  checkRetention,
  pruneInputs,
  pruneReceipts,
  type RetentionPolicy,
} from "./stores/retention.js";

export type { OpenStateHomeOptions } from "./home-options.js";
export { agentDbRelativePath, GLOBAL_DB_RELATIVE_PATH, resolveHomePath } from "./home-paths.js";
export {
  AGENT_COLUMNS,
  AGENT_DATABASE_COLUMNS,
  type AgentRecord,
} from "./stores/global/agent-registry-rows.js";
export type { AgentOpenOptions, AgentPin, AgentState };

/** Rows `StateHome.sweepExpired` removed: expired ones, and those past the retention policy. */
export interface HomeSweepReport {
  global: SweepReport;
  agents: Record<string, SweepReport>;
  /** Settled deliveries (global database) and completed inputs (by agent) past retention. */
  retention: { receipts: number; inputs: Record<string, number> };
}

/**
 * Agents a search across the home reads at a time: their hits are held until the slice is merged
 * (up to 500 each), and each slice is spread over the search threads.
 */
const SEARCH_SLICE = 512;

/**
 * An agentstate home: the global control-plane database, opened at once, and one database per
 * agent, opened on first use and registered in `agents` / `agent_databases`. The control-plane
 * stores (`home.cron`, `home.queue`, `home.plugins`, …) hang off the home itself.
 */
export class StateHome extends GlobalStores implements AgentSource {
  readonly path: string;
  readonly db: Database;
  /** Session entries and lifecycle, by `(agentId, sessionKey)`. */
  readonly sessions: SessionsApi;
  /** Transcripts, by `{ agentId, sessionId }`. */
  readonly transcripts: TranscriptsApi;
  /** Topics, facts, session state and context snapshots; `recover` and `recall`. */
  readonly memory: MemoryApi;
  /** Inbound messages held from acceptance until a turn completes them, by `(agentId, …)`. */
  readonly inputs = new InputsApi(this);
  /** Token usage, recorded cost and events per day, model or agent, from daily rollups. */
  readonly usage = new UsageApi(this);
  /** The maintenance policy (`agentstate.json`): cold storage, pruning and the disk budget. */
  readonly maintenance = new MaintenanceApi(this);
  private readonly pool: AgentPool<AgentState>;
  /** `agents` / `agent_databases`: the statements `cp.agents` runs too. */
  private readonly registry: AgentRegistryStore;
  private readonly openOptions: HomeDatabaseOptions;
  /** The retention given to `openStateHome`, if any: it wins over `agentstate.json`. */
  private readonly retentionGiven: RetentionPolicy | undefined;

  constructor(
    path: string,
    db: Database,
    options: HomeDatabaseOptions = {},
    maxOpenAgents = DEFAULT_MAX_OPEN_AGENTS,
    retention?: RetentionPolicy,
  ) {
    super(db);
    this.retentionGiven = retention;
    this.pool = new AgentPool(checkMaxOpenAgents(maxOpenAgents), (agentId) =>
      evictedMessage(agentId, maxOpenAgents),
    );
    this.path = path;
    this.db = db;
    this.openOptions = Object.freeze({ ...options });
    this.sessions = new SessionsApi(this);
    this.transcripts = new TranscriptsApi(this);
    this.memory = new MemoryApi(this);
    this.registry = new AgentRegistryStore(db);
  }

  /**
   * The open state of `agentId`, opening (creating and registering on first use) its database.
   * The state stays valid until the pool closes the agent to make room for others (see
   * `maxOpenAgents`): use it at once, or hold it with `withAgent` / `pinAgent`.
   */
  agent(agentId: string, options: AgentOpenOptions = {}): AgentState {
    rejectUnknownOptions(options, AGENT_OPTION_KEYS, "home.agent");
    return this.pool.use(agentId) ?? this.openAgentDatabase(agentId, options);
  }

  /**
   * Runs `fn` with the agent held open: for a synchronous `fn` until it returns, for one that
   * returns a promise until that promise settles.
   */
  withAgent<R>(agentId: string, fn: (agent: AgentState) => R, options: AgentOpenOptions = {}): R {
    if (typeof fn !== "function") throw new TypeError("Expected a function for withAgent()");
    const { agent, release } = this.pinAgent(agentId, options);
    return releasedAfter(() => fn(agent), release);
  }

  /** Opens the agent and holds it open until `release()`: the pool never closes a pinned agent. */
  pinAgent(agentId: string, options: AgentOpenOptions = {}): AgentPin {
    const agent = this.agent(agentId, options);
    return Object.freeze({ agent, release: this.pool.pin(agentId) });
  }

  /**
   * Runs `fn` for a one-off read of an existing agent: over its open state when the pool has it
   * open, else over a read-only connection that is closed before this returns (no pool entry, no
   * eviction of another agent). A database an older release wrote is opened through the pool,
   * which upgrades it; an unknown agent or a missing database fails as `withAgent` does.
   */
  readAgent<R>(agentId: string, fn: (agent: AgentReader) => R): R {
    const open = this.pool.peek(agentId);
    if (open !== undefined) return fn(open);
    const dbPath = join(this.path, agentDbRelativePath(agentId));
    if (this.hasAgent(agentId) && existsSync(dbPath)) {
      // A connection on its way out must be gone before another opens the file (see finishClosing).
      this.pool.finishClosing(agentId);
      const result = readBare(dbPath, agentId, this.openOptions, fn);
      if (result !== NEEDS_UPGRADE) return result;
    }
    return this.withAgent(agentId, fn, { create: false });
  }

  /**
   * Hands `each` every agent's search hits, in the order of `agentIds`: an agent the pool has
   * open is searched over its open state, the others over bare read-only connections, many at
   * once on the process's search threads when there are enough (see SearchThreads), in slices of
   * `SEARCH_SLICE` agents so that only a slice's hits are held at a time; an older file, a missing
   * one or an unknown agent as `readAgent` treats it. Throws what the first failed search threw.
   */
  searchAgents(
    agentIds: readonly string[],
    query: string,
    options: SearchOptions,
    each: (hits: SearchHit[]) => void,
  ): void {
    for (let from = 0; from < agentIds.length; from += SEARCH_SLICE) {
      const slice = agentIds.slice(from, from + SEARCH_SLICE);
      const found = this.searchBare(slice, query, options);
      slice.forEach((agentId, i) => {
        const outcome = found.get(i);
        if (outcome !== undefined && "error" in outcome) throw outcome.error;
        each(
          outcome !== undefined && "hits" in outcome
            ? outcome.hits
            : this.readAgent(agentId, (agent) => agent.search.search(query, options)),
        );
      });
    }
  }

  /** The outcomes of the agents of `agentIds` that are registered, not open and on disk, by index. */
  private searchBare(
    agentIds: readonly string[],
    query: string,
    options: SearchOptions,
  ): Map<number, BareSearchOutcome> {
    const items: { agentId: string; path: string }[] = [];
    const at: number[] = [];
    agentIds.forEach((agentId, i) => {
      if (this.pool.peek(agentId) !== undefined || !this.hasAgent(agentId)) return;
      const path = join(this.path, agentDbRelativePath(agentId));
      if (!existsSync(path)) return;
      // Nothing of this process may hold the file while a thread reads its header (see settle).
      this.pool.finishClosing(agentId);
      processCheckpointer().settle(path);
      items.push({ agentId, path });
      at.push(i);
    });
    const { driver, journalMode } = this.openOptions;
    const outcomes = processSearchThreads().searchEach({
      items,
      query,
      options,
      ...(driver ? { driver } : {}),
      ...(journalMode ? { journalMode } : {}),
    });
    return new Map(outcomes.map((outcome, k) => [at[k] as number, outcome]));
  }

  /** The pool of open agent databases: its cap, how many are open and pinned, and counters. */
  get agentPool(): AgentPoolStats {
    return this.pool.stats();
  }

  private openAgentDatabase(agentId: string, options: AgentOpenOptions): AgentState {
    const relative = agentDbRelativePath(agentId);
    const dbPath = join(this.path, relative);
    // An agent the pool opened before is registered: a reopen reads the registry only when the
    // file's schema moved since (an older copy put in its place).
    const reopen = this.pool.openedBefore(agentId);
    const registered = reopen ? undefined : this.registration(agentId, options);
    if ((reopen || registered) && !existsSync(dbPath)) {
      // Recreating it empty would hide a lost database behind a healthy-looking one.
      throw new StateError(
        "E_NOT_FOUND",
        `agent "${agentId}" is registered but its database is missing: ${dbPath}`,
        { details: { agentId, path: dbPath } },
      );
    }
    this.pool.finishClosing(agentId);
    const db = openHomeDatabase(dbPath, "agent", this.openOptions);
    if (!this.openOptions.readonly) {
      try {
        // A plain reopen writes nothing to the global database: sizes and last-seen times are
        // refreshed by `agentstate gc` (refreshAgentRecord), not by every open.
        const moved = reopen
          ? db.migration.applied.length > 0
          : registered?.schema_version !== db.schemaVersion;
        if (moved) this.register(agentId, relative, db);
        // The first open worked the backlog off; since then appends here index as they go.
        if (!reopen) finishAgentOpen(db, this.openOptions.onUpgradeProgress);
      } catch (error) {
        db.close();
        throw error;
      }
    }
    const state = defineAgentStores({ agentId, db }, db, agentId);
    this.pool.add(state);
    return state;
  }

  /**
   * Closes the agent's database now, pinned or not (later uses of its state get E_CLOSED with
   * `reason`), so its file can be replaced; the next `agent()` opens it again.
   */
  protected closeAgentDatabase(agentId: string, reason: string): void {
    this.pool.close(agentId, reason);
  }

  /** The agent's registry row; E_NOT_FOUND for an unknown agent this open may not create. */
  private registration(agentId: string, options: AgentOpenOptions) {
    const registered = this.registry.registration(agentId);
    if (!registered && (options.create === false || this.openOptions.readonly)) {
      throw new StateError("E_NOT_FOUND", `no agent "${agentId}" in home ${this.path}`, {
        details: { agentId, home: this.path },
      });
    }
    return registered;
  }

  private register(agentId: string, relative: string, db: Database): void {
    const registration = { path: relative, schemaVersion: db.schemaVersion };
    this.registry.register(agentId, { ...registration, sizeBytes: db.sizeBytes() });
  }

  /** Writes the agent's current size and the time now into its `agent_databases` row. */
  refreshAgentRecord(agentId: string): void {
    this.withAgent(
      agentId,
      ({ db }) => this.registry.refresh(agentId, { sizeBytes: db.sizeBytes() }),
      {
        create: false,
      },
    );
  }

  /** Registered agents, by id. */
  listAgents(): AgentRecord[] {
    return this.registry.listAll().map((agent) => ({
      agentId: agent.agentId,
      createdAt: agent.createdAt,
      dbPath: join(this.path, agent.path),
      schemaVersion: agent.schemaVersion,
      lastSeenAt: agent.lastSeenAt,
      sizeBytes: agent.sizeBytes,
    }));
  }

  /**
   * How long finished inputs and receipts are kept: `OpenStateHomeOptions.retention` when given,
   * else the `retention` section of the home's `agentstate.json` (read afresh, so an edit applies
   * to the next sweep), over the defaults. A broken file is `E_INVALID_ARGUMENT` naming the key.
   */
  get retention(): RetentionPolicy {
    return this.retentionGiven ?? checkRetention(loadRetention(this.path));
  }

  /**
   * Deletes expired rows (TTL) and rows past the retention policy (completed inputs, settled
   * delivery receipts) from the global database and every open agent database. Agents not open
   * now are left to `agentstate gc`, which opens each registered one.
   */
  sweepExpired(now: number = Date.now()): HomeSweepReport {
    const agents: Record<string, SweepReport> = {};
    const inputs: Record<string, number> = {};
    const retention = this.retention;
    for (const agent of this.pool.values()) {
      agents[agent.agentId] = sweepExpired(agent.db, now);
      inputs[agent.agentId] = pruneInputs(agent.db, retention, now);
    }
    const receipts = pruneReceipts(this.db, retention, now);
    return { global: sweepExpired(this.db, now), agents, retention: { receipts, inputs } };
  }

  hasAgent(agentId: string): boolean {
    return this.registry.has(agentId);
  }

  /** Closes every agent database (pinned or not), then the global one. Safe to call twice. */
  close(): void {
    this.pool.closeAll();
    this.db.close();
  }
}

export function openStateHome(options: OpenStateHomeOptions = {}): StateHome {
  rejectUnknownOptions(options, HOME_OPTION_KEYS, "openStateHome");
  return new StateHome(...stateHomeArgs(options));
}

/** What `openStateHome` builds a home from, once its options are checked (also for subclasses). */
export function stateHomeArgs(
  options: OpenStateHomeOptions,
): ConstructorParameters<typeof StateHome> {
  // Checked before anything opens, so a bad value leaves no handle behind.
  const cap = checkMaxOpenAgents(options.maxOpenAgents ?? DEFAULT_MAX_OPEN_AGENTS);
  const retention = options.retention === undefined ? undefined : checkRetention(options.retention);
  const driver = chooseDriver(options.driver);
  const path = resolveHomePath(options.home);
  const globalPath = join(path, GLOBAL_DB_RELATIVE_PATH);
  // A restore that died after its commit is finished before anything reads the home.
  settlePendingRestore(path);
  if ((options.create === false || options.readonly) && !existsSync(globalPath)) {
    throw new StateError(
      "E_NOT_FOUND",
      `no agentstate home at ${path} (missing ${GLOBAL_DB_RELATIVE_PATH})`,
      { details: { home: path } },
    );
  }
  const { readonly, journalMode, checkpoints, onUpgradeProgress } = options;
  const dbOptions = {
    ...(readonly ? { readonly } : {}),
    ...(journalMode ? { journalMode } : {}),
    ...(checkpoints ? { checkpoints: resolveCheckpoints(checkpoints) } : {}),
    driver,
  };
  return [
    path,
    openDatabase({ path: globalPath, role: "global", ...dbOptions }),
    { ...dbOptions, ...(onUpgradeProgress ? { onUpgradeProgress } : {}) },
    cap,
    retention,
  ];
}
