import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { checkInteger, checkText } from "../stores/checks.js";

export interface ClusterOptions {
  /** The shared control plane: `postgres://user:password@host:port/database`. */
  controlPlane: string;
  /** This host's name in `agent_leases.owner_host`: unique among the hosts, stable across restarts. */
  host: string;
  /**
   * Where agent databases are replicated: a directory or a `file://` URL (a mount shared by the
   * hosts). Each epoch of an agent goes to `<replicas>/<agentId>/e<epoch>`.
   */
  replicas: string;
  /** Lease length (default 10,000 ms); renewed every third of it. */
  leaseMs?: number;
  /**
   * Writes stop this long before the lease ends by this host's clock (default a fifth of the
   * lease): room for clock drift and a renewal in flight.
   */
  marginMs?: number;
  /** Litestream's `sync-interval` (default 1,000 ms): the most a host kill loses. */
  syncIntervalMs?: number;
  /** Agents this host owns at most (default 1,000); see README "Past one host". */
  maxAgents?: number;
  /** How long `durable()` waits for the replica before E_BUSY (default 30,000 ms). */
  durableTimeoutMs?: number;
}

export type CheckedClusterOptions = Readonly<Required<ClusterOptions>>;

/** The keys of `ClusterOptions`, for callers that read them from elsewhere (a config file). */
export const CLUSTER_OPTION_KEYS: ReadonlySet<string> = new Set([
  "controlPlane",
  "host",
  "replicas",
  "leaseMs",
  "marginMs",
  "syncIntervalMs",
  "maxAgents",
  "durableTimeoutMs",
]);

export function checkClusterOptions(options: ClusterOptions): CheckedClusterOptions {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Expected cluster options: { controlPlane, host, replicas }");
  }
  rejectUnknownOptions(options, CLUSTER_OPTION_KEYS, "openClusterHome({ cluster })");
  const leaseMs = checkInteger("leaseMs", options.leaseMs ?? 10_000, 300, 3_600_000);
  return Object.freeze({
    controlPlane: checkText("controlPlane", options.controlPlane, 4096),
    host: checkText("host", options.host, 256),
    replicas: replicaDirectory(options.replicas),
    leaseMs,
    marginMs: checkInteger("marginMs", options.marginMs ?? Math.floor(leaseMs / 5), 0, leaseMs - 1),
    syncIntervalMs: checkInteger("syncIntervalMs", options.syncIntervalMs ?? 1_000, 100, 3_600_000),
    maxAgents: checkInteger("maxAgents", options.maxAgents ?? 1_000, 1, 100_000),
    durableTimeoutMs: checkInteger(
      "durableTimeoutMs",
      options.durableTimeoutMs ?? 30_000,
      1,
      3_600_000,
    ),
  });
}

/**
 * The replica directory. Only file replicas for now: `durable()` and the choice of the replica to
 * restore read the replica's files; an S3-compatible bucket needs Litestream 0.5's API for both.
 */
function replicaDirectory(value: unknown): string {
  const text = checkText("replicas", value, 4096);
  if (text.startsWith("file://")) return fileURLToPath(text);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    throw new StateError(
      "E_UNSUPPORTED",
      `replicas must be a directory or a file:// URL in this release, got ${text.split("://")[0]}://`,
      { details: { replicas: text.replace(/\/\/[^@/]*@/, "//…@") } },
    );
  }
  return isAbsolute(text) ? text : resolve(text);
}
