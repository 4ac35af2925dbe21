import { spawn } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync } from "node:fs";
import { delimiter, join } from "node:path";
import { StateError } from "../db/errors.js";

/** Where Debian and Ubuntu install each PostgreSQL major version's client tools. */
export const DEBIAN_POSTGRES_ROOT = "/usr/lib/postgresql";
const POSTGRES_URL = /^postgres(ql)?:\/\//;
/** Enough of a tool's output to explain a failure or read an answer; the rest is repetition. */
const OUTPUT_KEPT = 8 * 1024;

export type PgTool = "pg_dump" | "psql";

export interface PgToolSearch {
  /** Directories searched first, in order (default: $PATH). */
  path?: readonly string[];
  /** Holds one directory per major version, each with a `bin/` (default: Debian's). */
  versionsRoot?: string;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The Debian version directories' `bin/`s, newest major version first. */
function versionedBins(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a))
    .map((name) => join(root, name, "bin"));
}

/** The tool's executable: on PATH, else in Debian's versioned directories, newest first; or null. */
export function findPgTool(tool: PgTool, search: PgToolSearch = {}): string | null {
  const path = search.path ?? (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  const dirs = [...path, ...versionedBins(search.versionsRoot ?? DEBIAN_POSTGRES_ROOT)];
  for (const dir of dirs) {
    const file = join(dir, tool);
    if (isExecutable(file)) return file;
  }
  return null;
}

/**
 * A control-plane URL split for a client tool: the password goes to the child through
 * PGPASSWORD, never through its argv (which any user of the machine can read), and never into
 * a message, a log or an archive.
 */
export interface PgTarget {
  /** The URL without its password, for the tool's `--dbname`. */
  dbname: string;
  /** `user@host:port/database`, for people. */
  server: string;
  password: string | null;
}

export function pgTarget(url: string, where: string): PgTarget {
  if (typeof url !== "string" || !POSTGRES_URL.test(url)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${where} must be a postgres:// or postgresql:// URL`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StateError("E_INVALID_ARGUMENT", `${where} is not a valid URL`);
  }
  const inQuery = parsed.searchParams.get("password");
  const password = parsed.password ? decodeURIComponent(parsed.password) : inQuery;
  parsed.password = "";
  parsed.searchParams.delete("password");
  const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : "";
  const port = parsed.port ? `:${parsed.port}` : "";
  const server = `${user}${parsed.hostname || "localhost"}${port}${parsed.pathname || "/"}`;
  return { dbname: parsed.toString(), server, password: password || null };
}

/** The child's environment: the password, and a bounded wait for a server that does not answer. */
export function pgEnv(target: PgTarget): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  env.PGCONNECT_TIMEOUT ??= "10";
  if (target.password !== null) env.PGPASSWORD = target.password;
  return env;
}

/** A tool's message with the password blanked, in case a server or tool ever echoes it. */
export function scrub(text: string, target: PgTarget): string {
  const clean = text.trim().replace(/\s*\n\s*/g, "; ");
  return target.password ? clean.split(target.password).join("…") : clean;
}

/** The executable, or `E_UNSUPPORTED` naming the tool, the server and where it was looked for. */
export function requirePgTool(tool: PgTool, target: PgTarget, purpose: string): string {
  const found = findPgTool(tool);
  if (found !== null) return found;
  throw new StateError(
    "E_UNSUPPORTED",
    `${tool} is needed to ${purpose} ${target.server}, but it is neither on PATH nor in ${DEBIAN_POSTGRES_ROOT}/*/bin; install the PostgreSQL client tools (Debian: postgresql-client)`,
    { details: { tool, server: target.server } },
  );
}

export interface PgRun {
  status: number | null;
  stdout: string;
  /** The end of stderr, password blanked. */
  stderr: string;
}

/** Runs a client tool to its end; a spawn failure (ENOENT, EACCES) is reported as its stderr. */
export function runPgTool(file: string, args: readonly string[], target: PgTarget): Promise<PgRun> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { env: pgEnv(target), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout = (stdout + chunk).slice(-OUTPUT_KEPT);
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-OUTPUT_KEPT);
    });
    child.on("error", (error) => resolve({ status: null, stdout, stderr: error.message }));
    child.on("close", (status) => resolve({ status, stdout, stderr: scrub(stderr, target) }));
  });
}

/**
 * pg_dump refuses a server newer than itself ("server version: 16.4; pg_dump version: 15.8"):
 * the versions it names, or null for any other failure.
 */
export function versionMismatch(stderr: string): { server: string; tool: string } | null {
  if (!/version mismatch/i.test(stderr)) return null;
  // Each version may carry a packager's suffix: "15.18 (Debian 15.18-0+deb12u1)".
  const match = /server version:\s*(\d[\w.]*)[^;]*;\s*pg_dump version:\s*(\d[\w.]*)/i.exec(stderr);
  return match ? { server: match[1] as string, tool: match[2] as string } : null;
}
