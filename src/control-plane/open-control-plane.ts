import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import type { ControlPlane, OpenControlPlaneOptions } from "./control-plane.js";
import { openSqliteControlPlane } from "./sqlite-control-plane.js";

const KEYS = ["home", "url", "queue", "cron", "clock", "maxConnections", "timeoutMs"];
const POSTGRES_URL = /^postgres(ql)?:\/\//;

/**
 * Opens the control plane (the delivery queue, agent leases and cron jobs): on PostgreSQL
 * with `{ url }`, or when `AGENTSTATE_CONTROL_PLANE` holds a `postgres://` URL (so a gateway
 * that opens `{ home }` moves to PostgreSQL without a code change); otherwise in the home's
 * global SQLite database, which needs no server.
 */
export async function openControlPlane(
  options: OpenControlPlaneOptions = {},
): Promise<ControlPlane> {
  rejectUnknownOptions(options, KEYS, "openControlPlane");
  const fromEnv = process.env.AGENTSTATE_CONTROL_PLANE;
  const url = "url" in options ? options.url : fromEnv || undefined;
  if (url === undefined) return openSqliteControlPlane(options);
  if (typeof url !== "string" || !POSTGRES_URL.test(url)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `control plane URL must start with postgres:// or postgresql://, got ${JSON.stringify(String(url).replace(/\/\/[^@/]*@/, "//…@"))}`,
    );
  }
  const { home: _home, ...rest } = options as { home?: unknown };
  // Loaded here, not with the package: a single-host home never pays for the PostgreSQL driver's
  // import (measured: about 60 ms of every process's start).
  const { openPostgresControlPlane } = await import("./postgres-control-plane.js");
  return openPostgresControlPlane({ ...rest, url });
}
