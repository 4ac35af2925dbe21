import type { Readable } from "node:stream";
import type { StateHome } from "../home.js";
import type { Clock } from "../stores/checks.js";
import type {
  AgentLease,
  LeaseFence,
  LeaseStatus,
  ReplicaReport,
} from "../stores/global/agent-lease-rows.js";
import type {
  Commitment,
  CommitmentStatus,
  NewCommitment,
} from "../stores/global/commitment-rows.js";
import type {
  ConversationBinding,
  NewConversationBinding,
} from "../stores/global/conversation-binding-rows.js";
import type {
  Conversation,
  ConversationAddress,
  ConversationListOptions,
} from "../stores/global/conversation-rows.js";
import type {
  ClaimedCronJob,
  CronClaimOptions,
  CronJob,
  CronJobDefinition,
  CronJobPatch,
  CronListOptions,
  CronRecordOptions,
  CronRunInput,
  CronRunLog,
} from "../stores/global/cron-store.js";
import type {
  ClaimedDelivery,
  DeliveryEntry,
  FailOptions,
  NewDeliveryEntry,
  PageOptions,
  ReceiptQuery,
  ReconcileReport,
  SettleOptions,
  UnknownDecision,
  UnknownPolicy,
} from "../stores/global/delivery-queue-store.js";
import type { SweepReport } from "../stores/global/expiry.js";
import type { FlowRun, FlowUpdate, NewFlowRun } from "../stores/global/flow-rows.js";
import type {
  Media,
  MediaInfo,
  MediaListOptions,
  MediaPutOptions,
} from "../stores/global/media-rows.js";
import type {
  PluginBlob,
  PluginBlobInfo,
  PluginBlobListOptions,
  PluginBlobSetOptions,
} from "../stores/global/plugin-blob-rows.js";
import type {
  PluginListOptions,
  PluginSetOptions,
  PluginStateEntry,
} from "../stores/global/plugin-state-rows.js";
import type {
  SubagentRun,
  SubagentRunPatch,
  SubagentRunRecord,
  SubagentSessionRole,
} from "../stores/global/subagent-run-rows.js";
import type { TaskDelivery, TaskDeliveryUpdate } from "../stores/global/task-delivery-rows.js";
import type { NewTaskRun, TaskRecord, TaskRun } from "../stores/global/task-rows.js";
import type { FlowStatus, TaskDeliveryStatus, TaskStatus } from "../stores/global/task-states.js";
import type { TaskTransitionOptions } from "../stores/global/task-transitions.js";
import type { JsonValue } from "../stores/json.js";
import type { RetentionOptions } from "../stores/retention.js";
import type { ControlPlaneAgents } from "./control-plane-agents.js";
import type { ControlPlaneBackupRuns, ControlPlaneMigrations } from "./control-plane-ledgers.js";

export type {
  AgentListOptions,
  AgentRefresh,
  AgentRegistration,
  RegisteredAgent,
} from "../stores/global/agent-registry-rows.js";
export type { ControlPlaneAgents } from "./control-plane-agents.js";
export type {
  ControlPlaneBackupRuns,
  ControlPlaneMigrationQuarantine,
  ControlPlaneMigrationRuns,
  ControlPlaneMigrationSources,
  ControlPlaneMigrations,
} from "./control-plane-ledgers.js";

export type {
  AgentLease,
  ClaimedCronJob,
  ClaimedDelivery,
  Commitment,
  CommitmentStatus,
  Conversation,
  ConversationAddress,
  ConversationBinding,
  ConversationListOptions,
  CronClaimOptions,
  CronJob,
  CronJobDefinition,
  CronJobPatch,
  CronListOptions,
  CronRecordOptions,
  CronRunInput,
  CronRunLog,
  DeliveryEntry,
  FailOptions,
  FlowRun,
  FlowStatus,
  FlowUpdate,
  LeaseFence,
  LeaseStatus,
  Media,
  MediaInfo,
  MediaListOptions,
  MediaPutOptions,
  NewCommitment,
  NewConversationBinding,
  NewDeliveryEntry,
  NewFlowRun,
  NewTaskRun,
  PageOptions,
  PluginBlob,
  PluginBlobInfo,
  PluginBlobListOptions,
  PluginBlobSetOptions,
  PluginListOptions,
  PluginSetOptions,
  PluginStateEntry,
  ReceiptQuery,
  ReconcileReport,
  ReplicaReport,
  RetentionOptions,
  SettleOptions,
  SubagentRun,
  SubagentRunPatch,
  SubagentRunRecord,
  SubagentSessionRole,
  TaskDelivery,
  TaskDeliveryStatus,
  TaskDeliveryUpdate,
  TaskRecord,
  TaskRun,
  TaskStatus,
  TaskTransitionOptions,
  UnknownDecision,
  UnknownPolicy,
};

export interface EnqueueOptions {
  /** Made for an agent: refused with E_LEASE_LOST (nothing queued) once its epoch moved on. */
  fence?: LeaseFence;
}

export interface QueueCounts {
  pending: number;
  leased: number;
  failed: number;
}

/**
 * The delivery queue, with the semantics of `DeliveryQueueStore` on either backend: entries are
 * claimed oldest due first under a lease id, a lapsed lease makes an entry claimable again and
 * fences its old holder out (E_CONFLICT), failures back off exponentially and dead-letter after
 * `maxAttempts`, and an `idempotencyKey` already queued returns the stored entry. A holder calls
 * `beginSend` before the platform call: should its lease lapse after that, the entry is `unknown`
 * (maybe sent) and is never handed out again until the gateway resolves it. Settled entries are
 * kept as receipts until `pruneReceipts`.
 */
export interface ControlPlaneQueue {
  enqueue(queue: string, entry: NewDeliveryEntry, options?: EnqueueOptions): Promise<DeliveryEntry>;
  claim(
    queue: string,
    owner: string,
    options?: { leaseMs?: number },
  ): Promise<ClaimedDelivery | undefined>;
  ack(queue: string, id: string, leaseId: string): Promise<void>;
  fail(
    queue: string,
    id: string,
    leaseId: string,
    error: string,
    options?: FailOptions,
  ): Promise<DeliveryEntry>;
  extend(queue: string, id: string, leaseId: string, leaseMs?: number): Promise<ClaimedDelivery>;
  /**
   * Records, under a live lease, that the platform call is about to start; await it before the
   * call. E_CONFLICT when the lease lapsed or was lost, or the send was already begun.
   */
  beginSend(queue: string, id: string, leaseId: string): Promise<ClaimedDelivery>;
  /** Delivered: the entry becomes a `sent` receipt. E_CONFLICT when the lease was lost. */
  settle(
    queue: string,
    id: string,
    leaseId: string,
    options?: SettleOptions,
  ): Promise<DeliveryEntry>;
  /** A queue's sends of unknown outcome, oldest send first; `after` the last for the next page. */
  listUnknown(queue: string, options?: PageOptions): Promise<DeliveryEntry[]>;
  /** Sends of unknown outcome in every queue, oldest send first. */
  listUnknownEverywhere(options?: { limit?: number }): Promise<DeliveryEntry[]>;
  /**
   * The gateway's decision about an unknown send; E_NOT_FOUND without the entry, E_CONFLICT when
   * its outcome is not unknown (any more): of hosts racing to decide, exactly one does.
   */
  resolveUnknown(queue: string, id: string, decision: UnknownDecision): Promise<DeliveryEntry>;
  /** Records a queue's lapsed sends as `unknown`, then applies the `onUnknown` policy to each. */
  reconcileUnknown(queue: string): Promise<ReconcileReport>;
  /** A queue's dead letters, oldest failure first; `after` the last for the next page. */
  listFailed(queue: string, options?: PageOptions): Promise<DeliveryEntry[]>;
  /**
   * Puts a dead letter back in line with a fresh attempt count, due now, and wakes `waitForWork`
   * as an enqueue does; undefined when there is no such dead letter. Of hosts racing to retry one,
   * exactly one does.
   */
  retry(queue: string, id: string): Promise<DeliveryEntry | undefined>;
  /** Deletes an entry in whatever state (a holder's later calls are E_NOT_FOUND); false if none. */
  delete(queue: string, id: string): Promise<boolean>;
  /** Receipts of a conversation, session or agent (at least one is required), newest first. */
  receipts(query: ReceiptQuery): Promise<DeliveryEntry[]>;
  /**
   * Deletes sent and failed entries past the policy's age or beyond its count per queue (the
   * `receipts*` settings of `RetentionOptions`); returns how many. Unsettled entries stay.
   */
  pruneReceipts(retention?: RetentionOptions): Promise<number>;
  get(queue: string, id: string): Promise<DeliveryEntry | undefined>;
  counts(queue: string): Promise<QueueCounts>;
  /** The queues holding entries not yet settled (pending, in flight or dead-lettered), by name. */
  queues(): Promise<string[]>;
  /**
   * Resolves true as soon as an entry of `queue` may be claimable (one is due now, one becomes due
   * within `timeoutMs`, or one was enqueued), false after `timeoutMs` without any. Only a hint:
   * `claim` can still come back empty when another worker was faster.
   */
  waitForWork(queue: string, timeoutMs: number): Promise<boolean>;
}

/** Which host owns each agent, under which epoch (see `agent_leases`). */
export interface ControlPlaneLeases {
  /**
   * Wins the agent for `host` for `ttlMs` when nobody holds it, its lease expired or was released
   * (the epoch grows by one), or `host` holds it already (a renewal, same epoch). E_NOT_OWNER,
   * naming the owner, while another host holds it.
   */
  acquire(agentId: string, host: string, ttlMs: number): Promise<AgentLease>;
  /** Extends every lease `host` holds to `ttlMs` from now, in one statement; returns them. */
  renew(host: string, ttlMs: number): Promise<AgentLease[]>;
  /** Gives the agent up; false when `host` no longer held it under `epoch`. */
  release(agentId: string, host: string, epoch: number): Promise<boolean>;
  /** The live lease on the agent, or undefined when nobody holds it. */
  owner(agentId: string): Promise<AgentLease | undefined>;
  /**
   * Records how far behind each agent's replica is, for the leases `host` still holds under the
   * reported epochs (others are skipped); returns how many took it.
   */
  report(host: string, reports: readonly ReplicaReport[]): Promise<number>;
  /** Every agent's lease row, held, lapsed or released, by agent id. */
  list(): Promise<LeaseStatus[]>;
}

/**
 * Cron jobs, with the semantics of `CronStore` on either backend, plus claims: hosts sharing the
 * control plane each call `claimDue`, and a due job goes to exactly one of them until its claim
 * lapses; `recordRun` under the claim's id settles it.
 */
export interface ControlPlaneCron {
  /** Adds a job (E_CONFLICT if its id exists); its first run is computed from now. */
  add(definition: CronJobDefinition): Promise<CronJob>;
  get(jobId: string): Promise<CronJob | undefined>;
  list(options?: CronListOptions): Promise<CronJob[]>;
  /** Changes a definition; the next run is recomputed only when the schedule or `enabled` changes. */
  update(jobId: string, patch: CronJobPatch): Promise<CronJob>;
  /** Removes a job and its run log; false when there was none. */
  remove(jobId: string): Promise<boolean>;
  /** Run history, newest first. */
  runs(jobId: string, options?: { limit?: number; before?: number }): Promise<CronRunLog[]>;
  /**
   * Records a finished run (state, next run from when it finished, a log row) and ends the job's
   * claim. With `claimId`: E_CONFLICT, nothing written, once another claimer took the job over.
   */
  recordRun(jobId: string, run: CronRunInput, options?: CronRecordOptions): Promise<CronJob>;
  /** Due enabled jobs, earliest first, each claimed for `owner` under a fresh claim id. */
  claimDue(owner: string, options: CronClaimOptions): Promise<ClaimedCronJob[]>;
  /**
   * Resolves true as soon as a job may be claimable (one is due now or within `timeoutMs`, or a
   * job was added or updated by any host), false after `timeoutMs` without any. Only a hint.
   */
  waitForDue(timeoutMs: number): Promise<boolean>;
}

/**
 * Task runs, with the semantics of `TaskStore` on either backend. `transition` reads, checks and
 * writes under one lock, so of hosts racing to move one task (`expected: "queued"` to `running`)
 * exactly one wins and the others get E_CONFLICT.
 */
export interface ControlPlaneTasks {
  /** Creates a task (E_CONFLICT if its id exists). */
  create(task: NewTaskRun): Promise<TaskRun>;
  get(taskId: string): Promise<TaskRun | undefined>;
  /**
   * Moves a task to `to` if `TASK_TRANSITIONS` allows it from its current status and it is in
   * `expected` (when given), else E_CONFLICT; stamps started_at / ended_at, merges `record`.
   */
  transition(taskId: string, to: TaskStatus, options?: TaskTransitionOptions): Promise<TaskRun>;
  /** Deletes a task and its delivery state; false when there was none. */
  delete(taskId: string): Promise<boolean>;
  /** Tasks in one status, oldest first (ties by task id), at most `limit` (default 100). */
  listByStatus(status: TaskStatus, options?: { limit?: number }): Promise<TaskRun[]>;
  listByFlow(flowId: string, options?: { limit?: number }): Promise<TaskRun[]>;
  listByRequester(sessionKey: string, options?: { limit?: number }): Promise<TaskRun[]>;
  readonly delivery: ControlPlaneTaskDelivery;
}

/** How each task's outcome reaches its requester, as `TaskDeliveryStore`. */
export interface ControlPlaneTaskDelivery {
  /** Sets a task's delivery state (E_NOT_FOUND without the task), keeping what is omitted. */
  set(taskId: string, update: TaskDeliveryUpdate): Promise<TaskDelivery>;
  get(taskId: string): Promise<TaskDelivery | undefined>;
  /** Deliveries still to make, oldest first (ties by task id). */
  listPending(options?: { limit?: number }): Promise<TaskDelivery[]>;
}

/**
 * The subagent run registry, with the semantics of `SubagentRunStore` on either backend. `update`,
 * `end` and `markCleanupHandled` read, patch and write under one lock, so patches from racing
 * hosts apply one after another and none is lost.
 */
export interface ControlPlaneSubagents {
  /** Writes a run's whole record, replacing any earlier one. */
  upsert(record: SubagentRunRecord): Promise<SubagentRun>;
  get(runId: string): Promise<SubagentRun | undefined>;
  /** Shallow-merges `patch` (or applies the function) to the run's record (E_NOT_FOUND without it). */
  update(runId: string, patch: SubagentRunPatch): Promise<SubagentRun>;
  /** Marks a run ended (default now), merging any outcome fields into its record. */
  end(runId: string, fields?: Partial<SubagentRunRecord>): Promise<SubagentRun>;
  markCleanupHandled(runId: string): Promise<SubagentRun>;
  /** Deletes a run; false when there was none. */
  delete(runId: string): Promise<boolean>;
  /** Runs in which `sessionKey` plays `role`, oldest first (ties by run id). */
  listBySession(
    role: SubagentSessionRole,
    sessionKey: string,
    options?: { limit?: number },
  ): Promise<SubagentRun[]>;
  /** Runs without an end, oldest first (ties by run id). */
  listUnfinished(options?: { limit?: number }): Promise<SubagentRun[]>;
  /** Ended runs whose cleanup is not handled, earliest end first (ties by run id). */
  listPendingCleanup(options?: { limit?: number }): Promise<SubagentRun[]>;
}

/**
 * Plugin state under `(pluginId, namespace, key)`, with the semantics of `PluginStateStore` on
 * either backend: JSON values (TEXT, byte-exact) with an optional time to live. Every write is one
 * statement, so of racing writers to one key the last wins whole and `seen` is new exactly once.
 */
export interface ControlPlanePluginState {
  get<T = JsonValue>(pluginId: string, namespace: string, key: string): Promise<T | undefined>;
  getEntry<T = JsonValue>(
    pluginId: string,
    namespace: string,
    key: string,
  ): Promise<PluginStateEntry<T> | undefined>;
  set<T extends JsonValue>(
    pluginId: string,
    namespace: string,
    key: string,
    value: T,
    options?: PluginSetOptions,
  ): Promise<PluginStateEntry<T>>;
  /** Removes the entry, expired or not; true when there was one. */
  delete(pluginId: string, namespace: string, key: string): Promise<boolean>;
  /** Live entries of one plugin namespace, ordered by key (bytewise). */
  list<T = JsonValue>(
    pluginId: string,
    namespace: string,
    options?: PluginListOptions,
  ): Promise<PluginStateEntry<T>[]>;
  /** Persistent dedupe: true when `key` was not live, and marks it seen for `ttlMs`. */
  seen(pluginId: string, namespace: string, key: string, ttlMs: number): Promise<boolean>;
}

/**
 * Plugin blobs under `(pluginId, namespace, key)`, with the semantics of `PluginBlobStore` on
 * either backend: bytes (BYTEA on PostgreSQL) with TEXT metadata and an optional time to live.
 */
export interface ControlPlanePluginBlobs {
  /** Writes the blob whole, replacing any earlier one (an expired one as if new). */
  set(
    pluginId: string,
    namespace: string,
    key: string,
    data: Uint8Array,
    options?: PluginBlobSetOptions,
  ): Promise<PluginBlobInfo>;
  get(pluginId: string, namespace: string, key: string): Promise<PluginBlob | undefined>;
  /** Removes the blob, expired or not; true when there was one. */
  delete(pluginId: string, namespace: string, key: string): Promise<boolean>;
  /** Live blobs of one plugin namespace, ordered by key (bytewise), without their bytes. */
  list(
    pluginId: string,
    namespace: string,
    options?: PluginBlobListOptions,
  ): Promise<PluginBlobInfo[]>;
}

/**
 * Media rows by `(subdir, id)`, with the semantics of `MediaStore` on either backend: a row holds
 * its metadata and its bytes (BYTEA on PostgreSQL). `withMaterialized`, which writes a temp file
 * on this host's disk, stays on the home's `MediaStore`.
 */
export interface ControlPlaneMedia {
  /** Writes the row whole, replacing any earlier one (an expired one as if new). */
  put(subdir: string, id: string, data: Uint8Array, options?: MediaPutOptions): Promise<MediaInfo>;
  get(subdir: string, id: string): Promise<Media | undefined>;
  /** The row's metadata, without its bytes. */
  info(subdir: string, id: string): Promise<MediaInfo | undefined>;
  /** The bytes in 64 KiB chunks, read on the first pull; E_NOT_FOUND is the stream's error. */
  stream(subdir: string, id: string): Promise<Readable>;
  /** Removes the row, expired or not; true when there was one. */
  delete(subdir: string, id: string): Promise<boolean>;
  /** Live media of one subdir, ordered by id (bytewise), without their bytes. */
  list(subdir: string, options?: MediaListOptions): Promise<MediaInfo[]>;
}

/**
 * Conversations, with the semantics of `ConversationStore` on either backend: one stable id per
 * platform address. A resolve is one upsert, so hosts resolving a new address at once share an id.
 */
export interface ControlPlaneConversations {
  /** The id of the conversation at `address`, created on first sight; same address, same id. */
  resolve(address: ConversationAddress): Promise<Conversation>;
  get(conversationId: string): Promise<Conversation | undefined>;
  /** Most recently seen first (ties by id), optionally of one channel; `before` pages on. */
  list(options?: ConversationListOptions): Promise<Conversation[]>;
}

/**
 * Which session a conversation is routed to, with the semantics of `ConversationBindingStore` on
 * either backend. A bind resolves (or checks) its conversation and writes the binding in one
 * transaction; the binding is one upsert, so of hosts switching one binding the last stands whole.
 */
export interface ControlPlaneConversationBindings {
  /** Binds, replacing any binding under the same key (E_NOT_FOUND: no such `conversationRef`). */
  bind(binding: NewConversationBinding): Promise<ConversationBinding>;
  /** The live binding under `bindingKey`. */
  get(bindingKey: string): Promise<ConversationBinding | undefined>;
  /** Removes the binding, expired or not; true when there was one. */
  unbind(bindingKey: string): Promise<boolean>;
  /** Live bindings that route to a session, oldest first (ties by binding key). */
  listBySession(
    targetSessionKey: string,
    options?: { limit?: number },
  ): Promise<ConversationBinding[]>;
  /** Live bindings made for a conversation, oldest first (ties by binding key). */
  listByConversation(
    conversationRef: string,
    options?: { limit?: number },
  ): Promise<ConversationBinding[]>;
}

/**
 * Multi-step task flows, with the semantics of `FlowStore` on either backend. `transition` and
 * `update` read, check (`expectedRevision`, then `FLOW_TRANSITIONS`) and write with the row locked,
 * so of hosts moving one flow at once each sees the one before's move.
 */
export interface ControlPlaneFlows {
  /** Creates a flow (E_CONFLICT if its id exists). */
  create(flow: NewFlowRun): Promise<FlowRun>;
  get(flowId: string): Promise<FlowRun | undefined>;
  /** Moves a flow to `to` if `FLOW_TRANSITIONS` allows it (else E_CONFLICT); bumps the revision. */
  transition(flowId: string, to: FlowStatus, update?: FlowUpdate): Promise<FlowRun>;
  /** Changes a flow's step or record without changing its status; bumps the revision. */
  update(flowId: string, update: FlowUpdate): Promise<FlowRun>;
  /** Deletes a flow; false when there was none. */
  delete(flowId: string): Promise<boolean>;
  /** Flows in one status, oldest first (ties by flow id). */
  listByStatus(status: FlowStatus, options?: { limit?: number }): Promise<FlowRun[]>;
  /** Flows of one owner, oldest first (ties by flow id). */
  listByOwner(ownerKey: string, options?: { limit?: number }): Promise<FlowRun[]>;
}

/**
 * Commitments, with the semantics of `CommitmentStore` on either backend. Every write is one
 * statement, so of racing writers to one id the last stands whole.
 */
export interface ControlPlaneCommitments {
  /** Writes the commitment whole, replacing any earlier one with its id. */
  upsert(commitment: NewCommitment): Promise<Commitment>;
  get(id: string): Promise<Commitment | undefined>;
  /** Sets its status (E_NOT_FOUND without it). */
  setStatus(id: string, status: CommitmentStatus): Promise<Commitment>;
  /** Deletes a commitment; false when there was none. */
  delete(id: string): Promise<boolean>;
  /** Pending commitments whose window has opened by `now` (default: the clock's), earliest first. */
  listDue(now?: number, options?: { limit?: number }): Promise<Commitment[]>;
  /** Every commitment of one agent session, earliest due first (ties by id). */
  listBySession(
    agentId: string,
    sessionKey: string,
    options?: { limit?: number },
  ): Promise<Commitment[]>;
}

export interface ControlPlane {
  readonly backend: "sqlite" | "postgres";
  readonly queue: ControlPlaneQueue;
  readonly leases: ControlPlaneLeases;
  readonly cron: ControlPlaneCron;
  readonly tasks: ControlPlaneTasks;
  readonly subagents: ControlPlaneSubagents;
  readonly pluginState: ControlPlanePluginState;
  readonly pluginBlobs: ControlPlanePluginBlobs;
  readonly media: ControlPlaneMedia;
  readonly conversations: ControlPlaneConversations;
  readonly conversationBindings: ControlPlaneConversationBindings;
  readonly flows: ControlPlaneFlows;
  readonly commitments: ControlPlaneCommitments;
  readonly backupRuns: ControlPlaneBackupRuns;
  readonly migrations: ControlPlaneMigrations;
  /** The agent registry: one list of the agents every host sharing the control plane has. */
  readonly agents: ControlPlaneAgents;
  /**
   * Deletes every row whose `expires_at` is at or before `now` (default: the clock's now), in each
   * control-plane table that has the column: expired rows are hidden from reads at once, and
   * leave the disk here. Each table is one DELETE of its own. On SQLite, the global database's
   * other expiring tables are swept too, as `home.sweepExpired` does.
   */
  sweepExpired(now?: number): Promise<SweepReport>;
  /** Closes what this control plane opened (a home it was given stays open). */
  close(): Promise<void>;
}

/** Queue settings, as `DeliveryQueueOptions` (defaults: 60 s lease, 5 attempts, 1 s … 1 h backoff). */
export interface ControlPlaneQueueOptions {
  leaseMs?: number;
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** What `reconcileUnknown` does with each unknown send (default: keep it for the gateway). */
  onUnknown?: UnknownPolicy;
}

/** Cron settings, as `CronStoreOptions`. */
export interface ControlPlaneCronOptions {
  /** Zone of cron schedules without `tz` (default: the host's). */
  defaultTimeZone?: string;
  /** Run-log rows kept per job (default 2000). */
  keepRunsPerJob?: number;
}

interface CommonOptions {
  queue?: ControlPlaneQueueOptions;
  cron?: ControlPlaneCronOptions;
  /** Unix milliseconds now; every host's clock should be NTP-synced well within the lease TTLs. */
  clock?: Clock;
}

export interface SqliteControlPlaneOptions extends CommonOptions {
  /** A home path (opened and closed with the control plane) or an open `StateHome` (borrowed). */
  home?: string | StateHome;
}

export interface PostgresControlPlaneOptions extends CommonOptions {
  /** `postgres://user:password@host:port/database` */
  url: string;
  /** Pool size (default 10). */
  maxConnections?: number;
  /**
   * How long a connect or a statement may take before it fails with E_IO (default 10,000 ms).
   * Without a bound, an unreachable server would hang a lease renewal for good, and with it
   * every renewal after it.
   */
  timeoutMs?: number;
}

export type OpenControlPlaneOptions = SqliteControlPlaneOptions | PostgresControlPlaneOptions;
