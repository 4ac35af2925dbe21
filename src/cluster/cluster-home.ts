import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ControlPlane } from "../control-plane/control-plane.js";
import { openControlPlane } from "../control-plane/open-control-plane.js";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { agentDbRelativePath, StateHome, stateHomeArgs } from "../home.js";
import { HOME_OPTION_KEYS, type OpenStateHomeOptions } from "../home-options.js";
import type { AgentOpenOptions, AgentState } from "../stores/agent/agent-state.js";
import type { AgentLease, ReplicaReport } from "../stores/global/agent-lease-rows.js";
import { AgentOwnership } from "./agent-ownership.js";
import {
  type CheckedClusterOptions,
  type ClusterOptions,
  checkClusterOptions,
} from "./cluster-options.js";
import { litestreamBinary } from "./litestream-binary.js";
import { epochPrefix, latestReplicaEpoch } from "./replica-layout.js";
import { openReplicaStore, type ReplicaStore } from "./replica-store.js";
import { Replicator } from "./replicator.js";
import { restoreAgentDatabase } from "./restore-agent.js";

export type { ClusterOptions };

export interface OpenClusterHomeOptions extends OpenStateHomeOptions {
  cluster: ClusterOptions;
}

/** An agent this host owns: its synchronous stores, plus the lease and replication around them. */
export interface ClusterAgent extends AgentState {
  readonly lease: AgentLease;
  /** Resolves once the off-host replica holds every commit made before the call. */
  durable(): Promise<void>;
  /** Stops replicating the agent (after a last sync) and gives its lease up; false if it was lost. */
  release(): Promise<boolean>;
}

/** The epoch this host last owned each agent under, in the home's own global database. */
const EPOCH_SCOPE = "agentstate.cluster.epoch";

/**
 * A home on one host of several: agents are owned one host at a time through leases in the
 * shared control plane, restored from and replicated to off-host replicas. `home.agent()` serves
 * only agents this host owns (E_NOT_OWNER otherwise); `openAgent` wins one.
 */
export class ClusterHome extends StateHome {
  readonly cluster: CheckedClusterOptions;
  private readonly owned = new Map<string, AgentOwnership>();
  private readonly handles = new Map<string, { agent: ClusterAgent; unpin: () => void }>();
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing = false;
  /**
   * Opens in flight, by agent: a second `openAgent` of the same agent shares the first's, and
   * renewals do not give up a lease won but not yet served.
   */
  private readonly opening = new Map<string, Promise<ClusterAgent>>();
  private closed = false;

  constructor(
    args: ConstructorParameters<typeof StateHome>,
    cluster: CheckedClusterOptions,
    readonly controlPlane: ControlPlane,
    private readonly binary: string,
    private readonly replicator: Replicator,
    private readonly replicaStore: ReplicaStore,
  ) {
    super(...args);
    this.cluster = cluster;
  }

  /** This host's Litestream process id, while it replicates anything. */
  get replicatorPid(): number | undefined {
    return this.replicator.pid;
  }

  /** Whether some host has replicated the agent: it exists in the cluster, if not here. */
  async hasReplica(agentId: string): Promise<boolean> {
    const latest = await latestReplicaEpoch(this.replicaStore, agentId, Number.MAX_SAFE_INTEGER);
    return latest !== undefined;
  }

  /**
   * Whether this host serves the agent now: it holds the lease, renewed in the background, and
   * its local deadline has not passed. A caller that sees true can use `agent()` without a round
   * trip to the control plane; `openAgent` is still what wins or renews a lease.
   */
  serves(agentId: string): boolean {
    const ownership = this.owned.get(agentId);
    return (
      ownership !== undefined &&
      !ownership.lost &&
      !ownership.paused &&
      this.handles.has(agentId) &&
      Date.now() < ownership.deadline
    );
  }

  override agent(agentId: string, options: AgentOpenOptions = {}): AgentState {
    const ownership = this.owned.get(agentId);
    if (ownership === undefined) {
      throw new StateError(
        "E_NOT_OWNER",
        `agent ${agentId} is not owned by host ${this.cluster.host}: open it with await home.openAgent("${agentId}")`,
        { details: { agentId, host: this.cluster.host } },
      );
    }
    return super.agent(agentId, options);
  }

  /**
   * Wins (or renews) the agent's lease, brings its database up to the replica when another host
   * wrote it since this one did, starts replicating it under the new epoch and returns its stores.
   * E_NOT_OWNER while another host holds it; E_BUSY past `maxAgents`.
   */
  async openAgent(agentId: string): Promise<ClusterAgent> {
    if (this.closed) throw new StateError("E_CLOSED", `home ${this.path} is closed`);
    const held = this.owned.get(agentId);
    if (held === undefined && this.owned.size >= this.cluster.maxAgents) {
      throw new StateError(
        "E_BUSY",
        `host ${this.cluster.host} owns ${this.owned.size} agents, its maxAgents: release one first`,
        { details: { host: this.cluster.host, maxAgents: this.cluster.maxAgents } },
      );
    }
    const inFlight = this.opening.get(agentId);
    if (inFlight) return inFlight;
    const opening = this.win(agentId, held).finally(() => this.opening.delete(agentId));
    this.opening.set(agentId, opening);
    return opening;
  }

  private async win(agentId: string, held: AgentOwnership | undefined): Promise<ClusterAgent> {
    const { host, leaseMs } = this.cluster;
    const requestedAt = Date.now();
    const lease = await this.controlPlane.leases.acquire(agentId, host, leaseMs);
    const handle = this.handles.get(agentId);
    if (held && handle && !held.lost && held.lease.epoch === lease.epoch) {
      held.renewed(requestedAt);
      return handle.agent;
    }
    if (held) this.forget(agentId, "it was opened again under a new epoch");
    try {
      return await this.take(lease, requestedAt);
    } catch (error) {
      // Not served here (a failed restore, say): the agent must not wait for the lease to lapse.
      this.forget(agentId, `agent "${agentId}" could not be opened on host ${host}`);
      await this.controlPlane.leases.release(agentId, host, lease.epoch).catch(() => false);
      throw error;
    }
  }

  private async take(lease: AgentLease, requestedAt: number): Promise<ClusterAgent> {
    const { agentId, epoch } = lease;
    const dbPath = join(this.path, agentDbRelativePath(agentId));
    await this.catchUp(agentId, epoch, dbPath);
    this.kv.set(EPOCH_SCOPE, agentId, epoch);
    const { leaseMs, marginMs } = this.cluster;
    const store = this.replicaStore;
    const prefix = epochPrefix(agentId, epoch);
    const ownership = new AgentOwnership(
      lease,
      dbPath,
      store,
      prefix,
      requestedAt,
      leaseMs,
      marginMs,
    );
    this.owned.set(agentId, ownership);
    const pin = this.pinAgent(agentId);
    pin.agent.db.setWriteGuard(ownership.guard);
    const { db } = pin.agent;
    // The cluster's one list of its agents: the local registry knows only this host's files.
    const registration = { path: agentDbRelativePath(agentId), schemaVersion: db.schemaVersion };
    await this.controlPlane.agents.register(agentId, {
      ...registration,
      sizeBytes: db.sizeBytes(),
    });
    const agent = this.handle(pin.agent, ownership);
    this.handles.set(agentId, { agent, unpin: pin.release });
    await this.replicator.set(agentId, { path: dbPath, replica: store.litestreamReplica(prefix) });
    this.startRenewing();
    return agent;
  }

  /**
   * Restores the agent from the last owner's replica unless this host's file already is that
   * owner's: missing here, or last written here under an older epoch than the replica's. The
   * current epoch's own prefix counts too: a host restarted within its lease renews it (same
   * epoch), and its file may be gone.
   */
  private async catchUp(agentId: string, epoch: number, dbPath: string): Promise<void> {
    const latest = await latestReplicaEpoch(this.replicaStore, agentId, epoch + 1);
    if (latest === undefined) return;
    const mine = this.kv.get<number>(EPOCH_SCOPE, agentId);
    if (existsSync(dbPath) && mine === latest) return;
    this.closeAgentDatabase(agentId, `agent "${agentId}" was restored from its replica`);
    const prefix = epochPrefix(agentId, latest);
    await restoreAgentDatabase(this.binary, dbPath, {
      replica: this.replicaStore.litestreamReplica(prefix),
      where: this.replicaStore.describe(prefix),
      config: join(this.replicator.dir, `restore-${agentId}.yml`),
    });
  }

  private handle(state: AgentState, ownership: AgentOwnership): ClusterAgent {
    const timeoutMs = this.cluster.durableTimeoutMs;
    // Shares the pooled state's stores (and their caches) instead of building a second set.
    return Object.freeze(
      Object.create(state, {
        lease: { value: Object.freeze({ ...ownership.lease }), enumerable: true },
        durable: { value: () => ownership.durable(timeoutMs) },
        release: { value: () => this.release(state.agentId, ownership) },
      }),
    ) as ClusterAgent;
  }

  /**
   * Writes stop, the replica catches up with the last commit (else the next owner would start
   * from an older state; on failure the agent stays owned and writable, and the error is thrown),
   * then Litestream lets go of the database and the lease is released.
   */
  private async release(agentId: string, ownership: AgentOwnership): Promise<boolean> {
    if (this.owned.get(agentId) !== ownership) return false;
    if (!ownership.lost) {
      ownership.paused = true;
      try {
        await ownership.durable(this.cluster.durableTimeoutMs);
      } catch (error) {
        ownership.paused = false;
        if (!ownership.lost) throw error;
      }
    }
    const lost = ownership.lost;
    const sizeBytes = this.handles.get(agentId)?.agent.db.sizeBytes();
    ownership.markLost();
    await this.replicator.delete(agentId);
    this.forget(agentId, `agent "${agentId}" was released by host ${this.cluster.host}`);
    if (lost) return false;
    // Recorded while the lease is still held, so it cannot overwrite the next owner's figure.
    if (sizeBytes !== undefined) await this.recordSize(agentId, sizeBytes);
    const { host } = this.cluster;
    return this.controlPlane.leases.release(agentId, host, ownership.lease.epoch);
  }

  /**
   * The released database's size and the time now, in the cluster's registry. Only a figure for
   * operators: a control plane that fails it must not keep the lease from being given up.
   */
  private async recordSize(agentId: string, sizeBytes: number): Promise<void> {
    await this.controlPlane.agents.refresh(agentId, { sizeBytes }).catch(() => undefined);
  }

  /** Drops the agent from this host's books and closes its database (uses get E_CLOSED). */
  private forget(agentId: string, reason: string): void {
    this.handles.get(agentId)?.unpin();
    this.handles.delete(agentId);
    const ownership = this.owned.get(agentId);
    this.owned.delete(agentId);
    this.closeAgentDatabase(agentId, reason);
    // After the database's connections (the checkpointer's too): its locks go with this close.
    ownership?.closeWalIndex();
    void this.replicator.delete(agentId);
  }

  private startRenewing(): void {
    if (this.renewTimer) return;
    this.renewTimer = setInterval(() => void this.renew(), Math.floor(this.cluster.leaseMs / 3));
    this.renewTimer.unref();
  }

  /**
   * One statement renews every lease of the host. A lease missing from the answer (or under
   * another epoch) was lost: its writes stay refused and it is no longer replicated. A lease in
   * the answer that this host does not serve (left by an earlier run under the same host name) is
   * given up, so its agent can move. A failed renewal changes nothing: the deadlines run out by
   * themselves.
   */
  private async renew(): Promise<void> {
    if (this.renewing || this.owned.size === 0) return;
    this.renewing = true;
    const requestedAt = Date.now();
    try {
      const leases = await this.controlPlane.leases.renew(this.cluster.host, this.cluster.leaseMs);
      const epochs = new Map(leases.map((l) => [l.agentId, l.epoch]));
      await this.releaseUnserved(leases);
      for (const [agentId, ownership] of this.owned) {
        if (ownership.lost) continue;
        if (epochs.get(agentId) === ownership.lease.epoch) ownership.renewed(requestedAt);
        else {
          ownership.markLost();
          void this.replicator.delete(agentId);
        }
      }
      await this.controlPlane.leases.report(this.cluster.host, await this.replicaReports());
    } catch {
      // Unreachable control plane: the local deadlines stop the writes.
    } finally {
      this.renewing = false;
    }
  }

  /** Each served agent's replica lag, for `agentstate cluster status`; unreadable ones are left out. */
  private async replicaReports(): Promise<ReplicaReport[]> {
    const now = Date.now();
    const reports: ReplicaReport[] = [];
    for (const [agentId, ownership] of this.owned) {
      if (ownership.lost || !this.handles.has(agentId)) continue;
      try {
        const lagMs = await ownership.replicaLagMs(now);
        reports.push({ agentId, epoch: ownership.lease.epoch, lagMs });
      } catch {
        // No WAL index yet (nothing written since the open), or an unreadable bucket: no report.
      }
    }
    return reports;
  }

  private async releaseUnserved(leases: readonly AgentLease[]): Promise<void> {
    for (const { agentId, epoch } of leases) {
      if (this.owned.has(agentId) || this.opening.has(agentId)) continue;
      await this.controlPlane.leases.release(agentId, this.cluster.host, epoch);
    }
  }

  /** Releases every agent, stops Litestream and the control plane, then closes the home. */
  override async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.renewTimer);
    for (const [agentId, ownership] of [...this.owned]) {
      await this.release(agentId, ownership).catch(() => false);
    }
    await this.replicator.close();
    // Closed already (or unreachable): the home still closes.
    await this.controlPlane.close().catch(() => {});
    super.close();
  }
}

/**
 * Opens a home as one host of a cluster (see `ClusterOptions`): the home itself as
 * `openStateHome` opens it, the control plane, and (once an agent is owned) a Litestream process.
 */
export async function openClusterHome(options: OpenClusterHomeOptions): Promise<ClusterHome> {
  const { cluster, ...homeOptions } = options;
  rejectUnknownOptions(homeOptions, HOME_OPTION_KEYS, "openClusterHome");
  const checked = checkClusterOptions(cluster);
  if (homeOptions.readonly) throw new TypeError("Expected a writable home for a cluster host");
  const binary = litestreamBinary();
  const controlPlane = await openControlPlane({ url: checked.controlPlane });
  try {
    const args = stateHomeArgs(homeOptions);
    const store = openReplicaStore(checked.replicaTarget);
    const replicator = new Replicator(binary, join(args[0], "cluster"), checked.syncIntervalMs);
    return new ClusterHome(args, checked, controlPlane, binary, replicator, store);
  } catch (error) {
    await controlPlane.close();
    throw error;
  }
}
