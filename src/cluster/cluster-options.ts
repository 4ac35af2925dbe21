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
   * hosts), or an S3-compatible bucket, `s3://bucket/prefix` (see `s3`). Each epoch of an agent
   * goes to `<replicas>/<agentId>/e<epoch>`.
   */
  replicas: string;
  /**
   * For `s3://` replicas only: the S3 API's endpoint (default AWS S3 in `region`), its `region`
   * (default `us-east-1`) and whether buckets are addressed in the path (default: when an
   * endpoint is given, as MinIO needs). Credentials come from the environment, as Litestream
   * takes them: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (or `LITESTREAM_`-prefixed ones).
   */
  s3?: S3ReplicaOptions;
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

export interface S3ReplicaOptions {
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
}

/** Where replicas go, once checked: a directory, or a bucket and the key prefix in it. */
export type ReplicaTarget =
  | { readonly kind: "file"; readonly directory: string }
  | {
      readonly kind: "s3";
      readonly bucket: string;
      readonly prefix: string;
      readonly endpoint: string | undefined;
      readonly region: string;
      readonly forcePathStyle: boolean;
    };

export interface CheckedClusterOptions {
  readonly controlPlane: string;
  readonly host: string;
  /** The directory of file replicas, or the `s3://` URL as given. */
  readonly replicas: string;
  readonly replicaTarget: ReplicaTarget;
  readonly leaseMs: number;
  readonly marginMs: number;
  readonly syncIntervalMs: number;
  readonly maxAgents: number;
  readonly durableTimeoutMs: number;
}

/** The keys of `ClusterOptions`, for callers that read them from elsewhere (a config file). */
export const CLUSTER_OPTION_KEYS: ReadonlySet<string> = new Set([
  "controlPlane",
  "host",
  "replicas",
  "s3",
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
  const replicaTarget = checkReplicaTarget(options.replicas, options.s3);
  return Object.freeze({
    controlPlane: checkText("controlPlane", options.controlPlane, 4096),
    host: checkText("host", options.host, 256),
    replicas:
      replicaTarget.kind === "file" ? replicaTarget.directory : (options.replicas as string),
    replicaTarget,
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

function checkReplicaTarget(value: unknown, s3: S3ReplicaOptions | undefined): ReplicaTarget {
  const text = checkText("replicas", value, 4096);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme === "s3") return Object.freeze(s3Target(text, s3 ?? {}));
  if (s3 !== undefined) {
    throw new StateError("E_INVALID_ARGUMENT", "the s3 option is for s3:// replicas only", {
      details: { replicas: redact(text) },
    });
  }
  if (scheme === "file") return Object.freeze({ kind: "file", directory: fileURLToPath(text) });
  if (scheme !== undefined) {
    throw new StateError(
      "E_UNSUPPORTED",
      `replicas must be a directory, a file:// URL or an s3:// URL, got ${scheme}://`,
      { details: { replicas: redact(text) } },
    );
  }
  return Object.freeze({ kind: "file", directory: isAbsolute(text) ? text : resolve(text) });
}

/** `s3://bucket/prefix`: the bucket in the host part, keys under the path (no trailing slash). */
function s3Target(text: string, s3: S3ReplicaOptions): ReplicaTarget {
  rejectUnknownOptions(s3, ["endpoint", "region", "forcePathStyle"], "cluster.s3");
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/i.exec(text);
  if (!match) {
    throw new StateError("E_INVALID_ARGUMENT", `replicas: not an s3://bucket/prefix URL`, {
      details: { replicas: redact(text) },
    });
  }
  const endpoint =
    s3.endpoint === undefined ? undefined : checkEndpoint(s3.endpoint).replace(/\/+$/, "");
  if (s3.forcePathStyle !== undefined && typeof s3.forcePathStyle !== "boolean") {
    throw new TypeError("Expected cluster.s3.forcePathStyle to be a boolean");
  }
  return {
    kind: "s3",
    bucket: match[1] as string,
    prefix: (match[2] ?? "").replace(/^\/+|\/+$/g, ""),
    endpoint,
    region: checkText("s3.region", s3.region ?? "us-east-1", 64),
    forcePathStyle: s3.forcePathStyle ?? endpoint !== undefined,
  };
}

function checkEndpoint(value: unknown): string {
  const text = checkText("s3.endpoint", value, 2048);
  if (!/^https?:\/\/[^/@\s]+(\/.*)?$/i.test(text)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      "s3.endpoint must be an http(s):// URL without credentials",
      {
        details: { endpoint: redact(text) },
      },
    );
  }
  return text;
}

function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//…@");
}
