import { openStateHome, type StateHome } from "../home.js";
import { type Clock, checkInteger } from "../stores/checks.js";
import { AgentLeaseStore } from "../stores/global/agent-lease-store.js";
import { CommitmentStore } from "../stores/global/commitment-store.js";
import { ConversationBindingStore } from "../stores/global/conversation-binding-store.js";
import { ConversationStore } from "../stores/global/conversation-store.js";
import { CronStore } from "../stores/global/cron-store.js";
import { DeliveryQueueStore } from "../stores/global/delivery-queue-store.js";
import { sweepExpired } from "../stores/global/expiry.js";
import { FlowStore } from "../stores/global/flow-store.js";
import { MediaStore } from "../stores/global/media-store.js";
import { PluginBlobStore } from "../stores/global/plugin-blob-store.js";
import { PluginStateStore } from "../stores/global/plugin-state-store.js";
import { SubagentRunStore } from "../stores/global/subagent-run-store.js";
import { TaskStore } from "../stores/global/task-store.js";
import { checkRetention, pruneReceipts } from "../stores/retention.js";
import { asyncFacade } from "./async-facade.js";
import type {
  ControlPlane,
  ControlPlaneCommitments,
  ControlPlaneConversationBindings,
  ControlPlaneConversations,
  ControlPlaneCron,
  ControlPlaneCronOptions,
  ControlPlaneFlows,
  ControlPlaneLeases,
  ControlPlaneMedia,
  ControlPlanePluginBlobs,
  ControlPlanePluginState,
  ControlPlaneQueue,
  ControlPlaneQueueOptions,
  ControlPlaneSubagents,
  ControlPlaneTasks,
  SqliteControlPlaneOptions,
} from "./control-plane.js";
import { QUEUE_NAMES_SQL } from "./pg-queue-sql.js";
import { sqliteAgents } from "./sqlite-agents.js";
import { sqliteBackupRuns, sqliteMigrations } from "./sqlite-ledgers.js";
import { CRON_SIGNAL, WorkSignal } from "./work-signal.js";

/**
 * The embedded control plane: today's global SQLite database and its stores, each call resolving
 * at once. `waitForWork` (`waitForDue`) is woken by enqueues (cron jobs added or updated) made in
 * this process, by any control plane on the same home; work from another process is found when
 * the wait times out, so keep timeouts short when several processes share a home.
 */
export function openSqliteControlPlane(options: SqliteControlPlaneOptions): ControlPlane {
  const owned = typeof options.home !== "object";
  const home = owned ? openStateHome({ home: options.home as string | undefined }) : options.home;
  const clock = options.clock ?? Date.now;
  return Object.freeze({
    backend: "sqlite" as const,
    queue: sqliteQueue(home as StateHome, clock, options.queue ?? {}),
    leases: sqliteLeases(new AgentLeaseStore((home as StateHome).db, clock)),
    cron: sqliteCron(home as StateHome, clock, options.cron ?? {}),
    tasks: sqliteTasks(new TaskStore((home as StateHome).db, { clock })),
    subagents: sqliteSubagents(new SubagentRunStore((home as StateHome).db, { clock })),
    pluginState: sqlitePluginState(new PluginStateStore((home as StateHome).db, { clock })),
    pluginBlobs: sqlitePluginBlobs(new PluginBlobStore((home as StateHome).db, { clock })),
    media: sqliteMedia(new MediaStore((home as StateHome).db, { clock })),
    conversations: sqliteConversations(new ConversationStore((home as StateHome).db, { clock })),
    conversationBindings: sqliteConversationBindings(
      new ConversationBindingStore((home as StateHome).db, { clock }),
    ),
    flows: sqliteFlows(new FlowStore((home as StateHome).db, { clock })),
    commitments: sqliteCommitments(new CommitmentStore((home as StateHome).db, { clock })),
    backupRuns: sqliteBackupRuns(home as StateHome),
    migrations: sqliteMigrations(home as StateHome, clock),
    agents: sqliteAgents(home as StateHome, clock),
    sweepExpired: async (now = clock()) => sweepExpired((home as StateHome).db, now),
    close: async () => {
      if (owned) (home as StateHome).close();
    },
  });
}

/** `ConversationStore` as it is: a resolve is one upsert under SQLite's write lock. */
function sqliteConversations(store: ConversationStore): ControlPlaneConversations {
  return asyncFacade(store, ["resolve", "get", "list"]) satisfies ControlPlaneConversations;
}

/** `ConversationBindingStore` as it is: a bind is one write transaction. */
function sqliteConversationBindings(
  store: ConversationBindingStore,
): ControlPlaneConversationBindings {
  return asyncFacade(store, [
    "bind",
    "get",
    "unbind",
    "listBySession",
    "listByConversation",
  ]) satisfies ControlPlaneConversationBindings;
}

/** `FlowStore` as it is: a change is one write transaction, which hosts on a home share. */
function sqliteFlows(store: FlowStore): ControlPlaneFlows {
  return asyncFacade(store, [
    "create",
    "get",
    "transition",
    "update",
    "delete",
    "listByStatus",
    "listByOwner",
  ]) satisfies ControlPlaneFlows;
}

/** `CommitmentStore` as it is: each write is one statement under SQLite's write lock. */
function sqliteCommitments(store: CommitmentStore): ControlPlaneCommitments {
  return asyncFacade(store, [
    "upsert",
    "get",
    "setStatus",
    "delete",
    "listDue",
    "listBySession",
  ]) satisfies ControlPlaneCommitments;
}

function sqliteQueue(home: StateHome, clock: Clock, settings: ControlPlaneQueueOptions) {
  const store = new DeliveryQueueStore(home.db, { ...settings, clock });
  const leases = new AgentLeaseStore(home.db, clock);
  const signal = signalFor(home.db.path, "queue");
  const due = home.db.prepare<{ next: number | null }>(
    `SELECT min(available_at) AS next FROM delivery_queue_entries
     WHERE queue_name = ? AND status = 'pending'`,
  );
  const queueNames = home.db.prepare<{ queue_name: string }>(QUEUE_NAMES_SQL);
  const queue: ControlPlaneQueue = {
    enqueue: async (name, entry, options = {}) => {
      const added = options.fence
        ? leases.fenced(options.fence, () => store.enqueue(name, entry))
        : store.enqueue(name, entry);
      signal.wake(name);
      return added;
    },
    claim: async (name, owner, options) => store.claim(name, owner, options),
    ack: async (name, id, leaseId) => store.ack(name, id, leaseId),
    fail: async (name, id, leaseId, error, options) =>
      store.fail(name, id, leaseId, error, options),
    extend: async (name, id, leaseId, leaseMs) => store.extend(name, id, leaseId, leaseMs),
    beginSend: async (name, id, leaseId) => store.beginSend(name, id, leaseId),
    settle: async (name, id, leaseId, options) => store.settle(name, id, leaseId, options),
    listUnknown: async (name, options) => store.listUnknown(name, options),
    listUnknownEverywhere: async (options) => store.listUnknownEverywhere(options),
    resolveUnknown: async (name, id, decision) => {
      const resolved = store.resolveUnknown(name, id, decision);
      // A send put back in line wakes waiting workers, as an enqueue does.
      if (resolved.status === "pending") signal.wake(name);
      return resolved;
    },
    reconcileUnknown: async (name) => {
      const report = store.reconcileUnknown(name);
      if (report.resent.length > 0) signal.wake(name);
      return report;
    },
    listFailed: async (name, options) => store.listFailed(name, options),
    retry: async (name, id) => {
      const retried = store.retry(name, id);
      // A dead letter put back in line wakes waiting workers, as an enqueue does.
      if (retried) signal.wake(name);
      return retried;
    },
    delete: async (name, id) => store.delete(name, id),
    receipts: async (query) => store.receipts(query),
    pruneReceipts: async (retention) => pruneReceipts(home.db, checkRetention(retention), clock()),
    get: async (name, id) => store.get(name, id),
    counts: async (name) => store.counts(name),
    queues: async () => queueNames.all().map((r) => r.queue_name),
    waitForWork: (name, timeoutMs) => {
      const ms = checkInteger("timeoutMs", timeoutMs, 0, 2_147_483_647);
      return signal.wait(name, ms, clock, async () => due.get(name)?.next ?? null);
    },
  };
  return Object.freeze(queue);
}

/**
 * One signal per global database in this process: every control plane opened on the same home
 * wakes on the others' enqueues, as hosts on PostgreSQL do on NOTIFY. Never removed: one small
 * entry per home a process ever opened.
 */
const signals = new Map<string, WorkSignal>();

/** The queue's signal is keyed by queue name, cron's by one name: each home has one of each. */
function signalFor(path: string, of: "queue" | "cron"): WorkSignal {
  const key = `${of}\0${path}`;
  const signal = signals.get(key) ?? new WorkSignal();
  signals.set(key, signal);
  return signal;
}

/** `CronStore` as it is, plus a wake-up for every host's `waitForDue` in this process. */
function sqliteCron(home: StateHome, clock: Clock, settings: ControlPlaneCronOptions) {
  const store = new CronStore(home.db, { ...settings, clock });
  const signal = signalFor(home.db.path, "cron");
  const woken = <T>(value: T) => {
    signal.wake(CRON_SIGNAL);
    return value;
  };
  const cron: ControlPlaneCron = {
    add: async (definition) => woken(store.add(definition)),
    get: async (jobId) => store.get(jobId),
    list: async (options) => store.list(options),
    update: async (jobId, patch) => woken(store.update(jobId, patch)),
    remove: async (jobId) => store.remove(jobId),
    runs: async (jobId, options) => store.runs(jobId, options),
    recordRun: async (jobId, run, options) => store.recordRun(jobId, run, options),
    claimDue: async (owner, options) => store.claimDue(owner, options),
    waitForDue: (timeoutMs) => {
      const ms = checkInteger("timeoutMs", timeoutMs, 0, 2_147_483_647);
      return signal.wait(CRON_SIGNAL, ms, clock, async () => store.nextClaimableAt());
    },
  };
  return Object.freeze(cron);
}

/** `TaskStore` as it is: its transition is one write transaction, which hosts on a home share. */
function sqliteTasks(store: TaskStore): ControlPlaneTasks {
  const delivery = asyncFacade(store.delivery, ["set", "get", "listPending"]);
  const tasks = asyncFacade(store, [
    "create",
    "get",
    "transition",
    "delete",
    "listByStatus",
    "listByFlow",
    "listByRequester",
  ]);
  return Object.freeze({ ...tasks, delivery }) satisfies ControlPlaneTasks;
}

/** `SubagentRunStore` as it is: its update is one write transaction, which hosts on a home share. */
function sqliteSubagents(store: SubagentRunStore): ControlPlaneSubagents {
  return asyncFacade(store, [
    "upsert",
    "get",
    "update",
    "end",
    "markCleanupHandled",
    "delete",
    "listBySession",
    "listUnfinished",
    "listPendingCleanup",
  ]) satisfies ControlPlaneSubagents;
}

/** `PluginStateStore` as it is: each write is one statement under SQLite's write lock. */
function sqlitePluginState(store: PluginStateStore): ControlPlanePluginState {
  // Written out: its get is generic in the value's type, which a mapped facade loses.
  const pluginState: ControlPlanePluginState = {
    get: async (pluginId, namespace, key) => store.get(pluginId, namespace, key),
    getEntry: async (pluginId, namespace, key) => store.getEntry(pluginId, namespace, key),
    set: async (pluginId, namespace, key, value, options) =>
      store.set(pluginId, namespace, key, value, options),
    delete: async (pluginId, namespace, key) => store.delete(pluginId, namespace, key),
    list: async (pluginId, namespace, options) => store.list(pluginId, namespace, options),
    seen: async (pluginId, namespace, key, ttlMs) => store.seen(pluginId, namespace, key, ttlMs),
  };
  return Object.freeze(pluginState);
}

/** `PluginBlobStore` as it is: each write is one statement under SQLite's write lock. */
function sqlitePluginBlobs(store: PluginBlobStore): ControlPlanePluginBlobs {
  return asyncFacade(store, ["set", "get", "delete", "list"]) satisfies ControlPlanePluginBlobs;
}

/** `MediaStore`'s row methods as they are; `withMaterialized` stays on the home's store. */
function sqliteMedia(store: MediaStore): ControlPlaneMedia {
  return asyncFacade(store, [
    "put",
    "get",
    "info",
    "stream",
    "delete",
    "list",
  ]) satisfies ControlPlaneMedia;
}

function sqliteLeases(store: AgentLeaseStore): ControlPlaneLeases {
  return asyncFacade(store, [
    "acquire",
    "renew",
    "release",
    "owner",
    "report",
    "list",
  ]) satisfies ControlPlaneLeases;
}
