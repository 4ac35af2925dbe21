import { closeSync, openSync, readSync } from "node:fs";
import { StateError } from "../db/errors.js";
import { type PgTarget, pgTarget, requirePgTool, runPgTool, versionMismatch } from "./pg-tools.js";

/** The dump's header lines naming both versions come within its first few hundred bytes. */
const HEADER_BYTES = 4096;

export interface ControlPlaneDump {
  server: string;
  serverVersion: string;
  pgDumpVersion: string;
  /** The dump, written by pg_dump straight to disk. */
  file: string;
}

function readHead(file: string): string {
  const fd = openSync(file, "r");
  try {
    const head = Buffer.alloc(HEADER_BYTES);
    return head.subarray(0, readSync(fd, head, 0, HEADER_BYTES, 0)).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

function headerVersion(head: string, label: string): string {
  return new RegExp(`^-- Dumped ${label} version (.+)$`, "m").exec(head)?.[1]?.trim() ?? "unknown";
}

function dumpFailure(tool: string, target: PgTarget, status: number | null, stderr: string) {
  const mismatch = versionMismatch(stderr);
  if (mismatch) {
    const major = mismatch.server.split(".")[0];
    return new StateError(
      "E_UNSUPPORTED",
      `${tool} is version ${mismatch.tool}, older than the PostgreSQL server at ${target.server} (version ${mismatch.server}); install the client tools of version ${major} or newer (Debian: postgresql-client-${major}) and back up again`,
      {
        details: {
          tool,
          server: target.server,
          serverVersion: mismatch.server,
          toolVersion: mismatch.tool,
        },
      },
    );
  }
  const how = status === null ? "could not be run" : `failed (exit ${status})`;
  return new StateError(
    "E_IO",
    `${tool} ${how} dumping the control plane at ${target.server}: ${stderr || "no message"}`,
    { details: { tool, server: target.server } },
  );
}

/**
 * Dumps the control-plane database at `url` into `file` with `pg_dump`: plain SQL without owners
 * or privileges (so it loads into any empty database), one consistent snapshot (pg_dump reads
 * in a single repeatable-read transaction), written by pg_dump itself, so no part of it passes
 * through this process's memory. A missing tool, an unreachable server or a pg_dump older than
 * the server is a `StateError` naming the tool and the server, never the password.
 */
export async function dumpControlPlane(url: string, file: string): Promise<ControlPlaneDump> {
  const target = pgTarget(url, "the control plane URL");
  const tool = requirePgTool("pg_dump", target, "back up the control plane at");
  const args = [
    "--format=plain",
    "--no-owner",
    "--no-privileges",
    `--file=${file}`,
    `--dbname=${target.dbname}`,
  ];
  const run = await runPgTool(tool, args, target);
  if (run.status !== 0) throw dumpFailure(tool, target, run.status, run.stderr);
  const head = readHead(file);
  return {
    server: target.server,
    serverVersion: headerVersion(head, "from database"),
    pgDumpVersion: headerVersion(head, "by pg_dump"),
    file,
  };
}
