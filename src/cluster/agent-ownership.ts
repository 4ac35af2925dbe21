import { StateError } from "../db/errors.js";
import type { AgentLease } from "../stores/global/agent-lease-rows.js";
import { type LocalCommit, reached, shadowTarget, WalIndexReader } from "./commit-position.js";
import { replicaPosition, SegmentLengths } from "./replica-layout.js";
import type { ReplicaStore } from "./replica-store.js";

/** Commits awaiting the replica that `replicaLagMs` remembers; past it the newest is replaced. */
const MAX_OBSERVED = 16;

/** A commit seen in the WAL index, and when it was first seen there. */
interface Observed {
  commit: LocalCommit;
  at: number;
}

/**
 * One agent this host holds: its lease, the local deadline past which its writes are refused
 * (known without asking the control plane), and where this epoch is replicated.
 */
export class AgentOwnership {
  /** Writes refused from this moment (Unix ms, this host's clock); 0 once the lease is lost. */
  deadline: number;
  lost = false;
  /** Set while a release waits for the replica: writes are refused, the lease is still held. */
  paused = false;
  /** Reads the WAL index; closed by `closeWalIndex` once the database is closed. */
  private readonly walIndex: WalIndexReader;
  /** Commits seen at earlier checks and not yet in the replica, oldest first. */
  private readonly unreplicated: Observed[] = [];
  /** The newest commit the replica was seen to hold. */
  private confirmed: LocalCommit | undefined;
  private readonly segmentLengths = new SegmentLengths();

  constructor(
    readonly lease: AgentLease,
    readonly dbPath: string,
    private readonly store: ReplicaStore,
    /** This epoch's prefix in the replica store. */
    readonly prefix: string,
    requestedAt: number,
    private readonly leaseMs: number,
    private readonly marginMs: number,
  ) {
    this.deadline = requestedAt + leaseMs - marginMs;
    this.walIndex = new WalIndexReader(dbPath);
  }

  /** Call once no connection of this process has the database open (see `WalIndexReader`). */
  closeWalIndex(): void {
    this.walIndex.close();
  }

  /**
   * A renewal sent at `requestedAt` came back: counted from when it was sent, not from the
   * server's clock, so a slow answer only shortens the lease.
   */
  renewed(requestedAt: number): void {
    if (!this.lost) this.deadline = requestedAt + this.leaseMs - this.marginMs;
  }

  markLost(): void {
    this.lost = true;
    this.deadline = 0;
  }

  /** The write guard: E_LEASE_LOST once the deadline passed (or the lease was lost or released). */
  readonly guard = (): void => {
    if (!this.paused && Date.now() < this.deadline) return;
    const { agentId, epoch, host } = this.lease;
    throw new StateError(
      "E_LEASE_LOST",
      `agent ${agentId}: write refused, ${host}'s lease under epoch ${epoch} ${this.lost ? "was lost" : this.paused ? "is being released" : "has run out"} (another host may own the agent now)`,
      { details: { agentId, epoch, host, deadline: this.deadline } },
    );
  };

  /**
   * Resolves once the replica holds this database's last commit: the commit's place in the WAL
   * (from the WAL index) is found in Litestream's shadow WAL, then waited for in the replica's
   * WAL segments (their lengths read from their LZ4 frames).
   */
  async durable(timeoutMs: number): Promise<void> {
    const commit = this.walIndex.lastCommit();
    const until = Date.now() + timeoutMs;
    let failure: unknown;
    for (;;) {
      // A bucket that fails a read (a timeout, a 503) may answer the next one: wait on.
      const held = await this.inReplica(commit).catch((error: unknown) => {
        failure = error;
        return false;
      });
      if (held) return;
      if (this.lost) throw this.lostError();
      if (Date.now() >= until) {
        throw new StateError(
          "E_BUSY",
          `agent ${this.lease.agentId}: the replica did not receive the last commit within ${timeoutMs} ms (${this.store.describe(this.prefix)})`,
          {
            details: {
              agentId: this.lease.agentId,
              replica: this.store.describe(this.prefix),
              timeoutMs,
            },
            cause: failure,
          },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, this.store.pollMs));
    }
  }

  /**
   * How long the replica has been missing a commit, as of `now`: 0 when it holds the last one,
   * else the time since the oldest commit it lacks was first seen here. Commits are seen when this
   * is called (after each lease renewal), so the figure is late by at most one call's interval; a
   * steady writer whose replica keeps up shows about the sync interval, not the time it has written.
   */
  async replicaLagMs(now: number): Promise<number> {
    const last = this.walIndex.lastCommit();
    const newest = this.unreplicated.at(-1)?.commit;
    // An empty WAL (nothing written since the WAL started over) has no commit to wait for.
    const empty = last.end <= 32;
    if (!empty && (newest?.salt !== last.salt || newest.end !== last.end)) {
      if (this.unreplicated.length >= MAX_OBSERVED) this.unreplicated.pop();
      this.unreplicated.push({ commit: last, at: now });
    }
    while (
      this.unreplicated.length > 0 &&
      (await this.inReplica((this.unreplicated[0] as Observed).commit))
    ) {
      this.unreplicated.shift();
    }
    const oldest = this.unreplicated[0];
    return oldest === undefined ? 0 : now - oldest.at;
  }

  private async inReplica(commit: LocalCommit): Promise<boolean> {
    // A replica never loses what it held: a commit at or before one it was seen to hold (same
    // WAL) is answered without reading it again. A renewal then reads the replica of an agent
    // only after new writes, not of every agent the host owns each time (a bucket bills reads).
    const known = this.confirmed;
    if (known !== undefined && known.salt === commit.salt && commit.end <= known.end) return true;
    const target = shadowTarget(this.walIndex, commit);
    if (target === undefined) return false;
    const { store, prefix, segmentLengths } = this;
    const held = reached(
      await replicaPosition(store, prefix, target.generation, segmentLengths),
      target,
    );
    if (held && (known?.salt !== commit.salt || commit.end > known.end)) this.confirmed = commit;
    return held;
  }

  private lostError(): StateError {
    try {
      this.guard();
    } catch (error) {
      return error as StateError;
    }
    return new StateError("E_LEASE_LOST", `agent ${this.lease.agentId}: lease lost`);
  }
}
