// The global database's registry of agents (`agents`, `agent_databases`): row shapes, the records
// `home.listAgents()` and `cp.agents` return, and the checks every backend runs before a write.
import { columnsOf } from "../../db/columns.js";
import { StateError } from "../../db/errors.js";
import { validateAgentId } from "../../ids.js";
import { checkInteger, checkLimit, checkOptions, checkText } from "../checks.js";

export interface AgentRegistryRow {
  agent_id: string;
  config_fingerprint: string | null;
  created_at: number;
  updated_at: number;
  agent_db_path: string;
}

export interface AgentDatabaseRow {
  agent_id: string;
  path: string;
  schema_version: number;
  last_seen_at: number;
  size_bytes: number;
  quick_check: string | null;
  quick_checked_at: number | null;
}

export const AGENT_COLUMNS = columnsOf<AgentRegistryRow>()(
  "agent_id",
  "config_fingerprint",
  "created_at",
  "updated_at",
  "agent_db_path",
);
export const AGENT_DATABASE_COLUMNS = columnsOf<AgentDatabaseRow>()(
  "agent_id",
  "path",
  "schema_version",
  "last_seen_at",
  "size_bytes",
  "quick_check",
  "quick_checked_at",
);

/** What the registry's reads select: an agent joined with its database's row. */
export type RegisteredAgentRow = Pick<AgentRegistryRow, "agent_id" | "created_at" | "updated_at"> &
  Omit<AgentDatabaseRow, "agent_id">;

export interface AgentRecord {
  agentId: string;
  createdAt: number;
  /** Absolute path of the agent's database. */
  dbPath: string;
  schemaVersion: number;
  lastSeenAt: number;
  sizeBytes: number;
}

/** An agent's registry entry, as `cp.agents` returns it on either backend. */
export interface RegisteredAgent {
  agentId: string;
  /** When it was first registered (Unix ms): kept by every later registration. */
  createdAt: number;
  /** When it was last registered (opened under a new schema version, or by another host). */
  updatedAt: number;
  /** Its database, relative to the home (the same on every host of a cluster). */
  path: string;
  schemaVersion: number;
  /** When its size was last recorded. */
  lastSeenAt: number;
  sizeBytes: number;
  /** The last background `PRAGMA quick_check`: "ok" or the problems found; null before one. */
  quickCheck: string | null;
  quickCheckedAt: number | null;
}

/** An agent's database as a host registers it. */
export interface AgentRegistration {
  /** Relative to the home, as `agentDbRelativePath` gives it. */
  path: string;
  schemaVersion: number;
  sizeBytes: number;
}

/** An agent database's size (and, optionally, its last quick_check) as measured now. */
export interface AgentRefresh {
  sizeBytes: number;
  quickCheck?: { result: string; checkedAt: number };
}

export interface AgentListOptions {
  /** Keyset pagination: only agents whose id sorts after this one. */
  after?: string;
  /** At most this many agents (default 100). */
  limit?: number;
}

const REGISTRATION_KEYS = ["path", "schemaVersion", "sizeBytes"] as const;
const REFRESH_KEYS = ["sizeBytes", "quickCheck"] as const;
const LIST_KEYS = ["after", "limit"] as const;
/** Paths are home-relative: short, but longer than names. */
const MAX_PATH_LENGTH = 4096;
const MAX_QUICK_CHECK_TEXT = 16 * 1024;

export function fromRow(row: RegisteredAgentRow): RegisteredAgent {
  return {
    agentId: row.agent_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    path: row.path,
    schemaVersion: row.schema_version,
    lastSeenAt: row.last_seen_at,
    sizeBytes: row.size_bytes,
    quickCheck: row.quick_check,
    quickCheckedAt: row.quick_checked_at,
  };
}

function checkObject<T extends object>(what: string, value: unknown, keys: readonly string[]): T {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new StateError("E_INVALID_ARGUMENT", `${what} must be an object`);
  }
  return checkOptions(value as T, keys, what);
}

const checkSize = (agentId: string, value: unknown) =>
  checkInteger(`agent ${agentId} sizeBytes`, value, 0, Number.MAX_SAFE_INTEGER);

/** The register statements' parameters, every argument checked before anything is written. */
export function registerParams(agentId: unknown, registration: unknown, now: number) {
  const id = validateAgentId(agentId);
  const given = checkObject<AgentRegistration>(
    "agent registration",
    registration,
    REGISTRATION_KEYS,
  );
  return {
    agentId: id,
    path: checkText(`agent ${id} path`, given.path, MAX_PATH_LENGTH),
    schemaVersion: checkInteger(`agent ${id} schemaVersion`, given.schemaVersion, 0, 2 ** 31 - 1),
    sizeBytes: checkSize(id, given.sizeBytes),
    now,
  };
}

/** The refresh statement's parameters: a quick_check result and its time, or neither. */
export function refreshParams(agentId: unknown, refresh: unknown, now: number) {
  const id = validateAgentId(agentId);
  const given = checkObject<AgentRefresh>("agent refresh", refresh, REFRESH_KEYS);
  const sizeBytes = checkSize(id, given.sizeBytes);
  if (given.quickCheck === undefined) {
    return { agentId: id, sizeBytes, now, quickCheck: null, quickCheckedAt: null };
  }
  const check = checkObject<{ result: string; checkedAt: number }>(
    `agent ${id} quickCheck`,
    given.quickCheck,
    ["result", "checkedAt"],
  );
  return {
    agentId: id,
    sizeBytes,
    now,
    quickCheck: checkText(`agent ${id} quickCheck.result`, check.result, MAX_QUICK_CHECK_TEXT),
    quickCheckedAt: checkInteger(
      `agent ${id} quickCheck.checkedAt`,
      check.checkedAt,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
  };
}

export function listParams(options: unknown) {
  const given = checkObject<AgentListOptions>("agent list options", options, LIST_KEYS);
  return {
    after: given.after === undefined || given.after === "" ? "" : validateAgentId(given.after),
    limit: checkLimit(given.limit),
  };
}

export function agentNotRegistered(agentId: string): StateError {
  return new StateError("E_NOT_FOUND", `no agent "${agentId}" is registered`, {
    details: { agentId },
  });
}
