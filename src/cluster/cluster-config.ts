import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { StateError } from "../db/errors.js";
import { CONFIG_FILE } from "../maintenance/policy.js";
import {
  type CheckedClusterOptions,
  CLUSTER_OPTION_KEYS,
  type ClusterOptions,
  checkClusterOptions,
  type S3ReplicaOptions,
} from "./cluster-options.js";

/** What may stand in for a key of the file, so that a password or a host name stays out of it. */
export interface ClusterConfigOverrides {
  /** `--cluster-host`: wins over `$AGENTSTATE_HOST` and `cluster.host`. */
  host?: string;
  /** The environment to read `AGENTSTATE_CONTROL_PLANE` and `AGENTSTATE_HOST` from. */
  env?: NodeJS.ProcessEnv;
}

/** Where each key's value came from, for the error that names it. */
type Sources = Partial<Record<keyof ClusterOptions, string>>;

function configError(file: string, where: string, message: string): StateError {
  return new StateError("E_INVALID_ARGUMENT", `${file}: ${where}: ${message}`, {
    details: { file, path: where },
  });
}

function readSection(file: string): Record<string, unknown> | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${file}: not valid JSON (${(error as Error).message})`,
      { details: { file, path: "" } },
    );
  }
  const section = (raw as Record<string, unknown> | null)?.cluster;
  if (section === undefined) return undefined;
  if (typeof section !== "object" || section === null || Array.isArray(section)) {
    throw configError(file, "cluster", "must be an object: { controlPlane, host, replicas, … }");
  }
  return section as Record<string, unknown>;
}

/**
 * The cluster options of the home's `agentstate.json` (its `cluster` section), or undefined when
 * the home has none: then it is a single-host home. `$AGENTSTATE_CONTROL_PLANE` wins over
 * `cluster.controlPlane`; `--cluster-host`, then `$AGENTSTATE_HOST`, over `cluster.host`. A
 * relative `replicas` is the home's. Every problem names the file and the key (or the variable).
 */
export function loadClusterConfig(
  homePath: string,
  overrides: ClusterConfigOverrides = {},
): ClusterOptions | undefined {
  const file = join(homePath, CONFIG_FILE);
  const section = existsSync(file) ? readSection(file) : undefined;
  if (section === undefined) return undefined;
  for (const key of Object.keys(section)) {
    if (!CLUSTER_OPTION_KEYS.has(key)) throw configError(file, `cluster.${key}`, "unknown key");
  }
  const env = overrides.env ?? process.env;
  const given = { ...section } as Record<string, unknown>;
  const sources: Sources = {};
  if (env.AGENTSTATE_CONTROL_PLANE) {
    given.controlPlane = env.AGENTSTATE_CONTROL_PLANE;
    sources.controlPlane = "$AGENTSTATE_CONTROL_PLANE";
  }
  const host = overrides.host ?? (env.AGENTSTATE_HOST || undefined);
  if (host !== undefined) {
    given.host = host;
    sources.host = overrides.host === undefined ? "$AGENTSTATE_HOST" : "--cluster-host";
  }
  requireKey(file, given, "controlPlane", "or set $AGENTSTATE_CONTROL_PLANE");
  requireKey(file, given, "host", "or pass --cluster-host, or set $AGENTSTATE_HOST");
  requireKey(file, given, "replicas", "a directory shared by the hosts, or an s3:// bucket");
  if (typeof given.replicas === "string" && !/^[a-z][a-z0-9+.-]*:\/\//i.test(given.replicas)) {
    given.replicas = isAbsolute(given.replicas)
      ? given.replicas
      : resolve(homePath, given.replicas);
  }
  let checked: CheckedClusterOptions;
  try {
    checked = checkClusterOptions(given as unknown as ClusterOptions);
  } catch (error) {
    throw blame(file, error, sources);
  }
  // Options as `openClusterHome` takes them, defaults filled: it checks them again itself.
  const { replicaTarget: _, ...options } = checked;
  return given.s3 === undefined ? options : { ...options, s3: given.s3 as S3ReplicaOptions };
}

function requireKey(file: string, given: Record<string, unknown>, key: string, hint: string) {
  if (given[key] === undefined) throw configError(file, `cluster.${key}`, `missing (${hint})`);
}

/** `checkClusterOptions` names the option first in each message: the key to point at. */
function blame(file: string, error: unknown, sources: Sources): unknown {
  if (!(error instanceof StateError)) return error;
  const key = /^(\w+)\b/.exec(error.message)?.[1] as keyof ClusterOptions | undefined;
  if (key === undefined || !CLUSTER_OPTION_KEYS.has(key)) return error;
  const source = sources[key];
  if (source !== undefined) {
    return new StateError(error.code, `${source}: ${error.message}`, {
      details: { source, key },
      cause: error,
    });
  }
  return configError(file, `cluster.${key}`, error.message);
}
