import type { Command } from "commander";
import { isStateError, StateError } from "../../db/errors.js";
import { legacyHomeHint, looksLikeLegacyHome } from "../../doctor/legacy-home.js";
import { resolveHomePath } from "../../home.js";
import { describeHome, type HomeStatus } from "../../status/describe-home.js";
import type { Budget, HomeStorage } from "../../status/storage-budget.js";
import {
  addExamples,
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  withReadHome,
} from "../common.js";
import { formatBytes, pathInHome, printJson, renderTable } from "../output.js";
import { formatTime } from "../render/style.js";

function when(ms: number | null): string {
  return ms === null ? "-" : formatTime(undefined, ms);
}

function renderRuns(status: HomeStatus): string[] {
  const { lastBackup: backup, lastMigration: migration } = status;
  const lines = [
    backup
      ? `last backup: ${when(backup.at)} ${backup.status} (${pathInHome(status.home, backup.archive)})`
      : "last backup: none yet (agentstate backup create)",
  ];
  if (migration) {
    const left =
      migration.status === "partial"
        ? ": some legacy sources are still left (agentstate doctor shows them)"
        : "";
    lines.push(`last migration: ${when(migration.at)} ${migration.status}${left}`);
  }
  return lines;
}

function ofBudget(bytes: number, budget: Budget | null): string {
  if (!budget) return formatBytes(bytes);
  const over = budget.overBytes > 0 ? `, ${formatBytes(budget.overBytes)} over` : "";
  return `${formatBytes(bytes)} of ${formatBytes(budget.maxDiskBytes)} budget${over}`;
}

/** Hot and cold bytes per agent, and the home's every byte, each against its budget. */
function renderStorage(storage: HomeStorage): string[] {
  const { budget } = storage;
  const home = budget
    ? `disk: ${ofBudget(storage.homeBytes, budget)} (every file of the home counts; gc works down to ${formatBytes(budget.highWaterBytes)})`
    : `disk: ${formatBytes(storage.homeBytes)}, every file of the home; no budget set (agentstate.json maintenance.maxDiskBytes)`;
  const lines = [home];
  if (storage.policyError) lines.push(`budget unknown: ${storage.policyError}`);
  if (storage.agents.length === 0) return lines;
  lines.push(
    "",
    renderTable(storage.agents, [
      { header: "AGENT", value: (a) => a.agentId },
      { header: "HOT", value: (a) => formatBytes(a.hotBytes), align: "right" },
      { header: "COLD", value: (a) => formatBytes(a.coldBytes), align: "right" },
      { header: "TOTAL", value: (a) => ofBudget(a.totalBytes, a.budget), align: "right" },
    ]),
  );
  return lines;
}

export function renderStatus(status: HomeStatus): string {
  const { home, databases, agents } = status;
  const lines = [`home: ${home}`, ""];
  lines.push(
    renderTable(databases, [
      { header: "ROLE", value: (d) => d.role },
      { header: "AGENT", value: (d) => d.agentId ?? "-" },
      { header: "SIZE", value: (d) => formatBytes(d.bytes), align: "right" },
      { header: "SCHEMA", value: (d) => d.schemaVersion, align: "right" },
      { header: "CHECK", value: (d) => d.quickCheck, max: 40 },
      { header: "VACUUM", value: (d) => d.autoVacuum },
      { header: "FREE", value: (d) => formatBytes(d.freeBytes), align: "right" },
      {
        header: "LAST GC CHECK",
        value: (d) =>
          d.lastQuickCheck ? `${d.lastQuickCheck.result} ${when(d.lastQuickCheck.at)}` : "-",
        max: 40,
      },
      { header: "PATH", value: (d) => pathInHome(home, d.path) },
    ]),
  );
  if (agents.length > 0) {
    lines.push(
      "",
      renderTable(agents, [
        { header: "AGENT", value: (a) => a.agentId },
        { header: "SESSIONS", value: (a) => a.sessions, align: "right" },
        { header: "LAST ACTIVITY", value: (a) => when(a.lastActivityAt) },
      ]),
    );
  }
  lines.push("", ...renderStorage(status.storage), "", ...renderRuns(status));
  const older = databases.filter((d) => d.autoVacuum !== "incremental").length;
  if (older > 0) {
    // Their free pages stay in the file until a rewrite switches them (docs/operations.md).
    lines.push(
      `${older} database${older === 1 ? "" : "s"} from an older release keep${older === 1 ? "s" : ""} deleted rows' space: agentstate gc --vacuum gives it back`,
    );
  }
  for (const db of databases) {
    const counts = Object.entries(db.tables)
      .map(([table, rows]) => `${table}=${rows}`)
      .join(" ");
    lines.push("", `${db.agentId ?? "global"} rows: ${counts}`);
  }
  return lines.join("\n");
}

/** A home that is not an agentstate home yet may be a legacy one: say how to migrate it. */
function notAHome(error: unknown, home: string): unknown {
  if (!isStateError(error, "E_NOT_FOUND")) return error;
  const hint = looksLikeLegacyHome(home)
    ? `it holds legacy gateway state not migrated yet: run \`agentstate doctor --home ${home}\` to see the plan`
    : legacyHomeHint(home);
  if (hint === null) return error;
  return new StateError("E_NOT_FOUND", `${error.message}; ${hint}`, {
    cause: error,
    details: { home },
  });
}

export function registerStatus(program: Command): void {
  const command = program
    .command("status")
    .description(
      "describe a home: every database (size, schema, health, rows), each agent's last activity, the last backup and migration",
    );
  addExamples(command, ["agentstate status", "agentstate status --home ~/.agentstate --json"]);
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: HomeOptions & JsonOption) => {
    let status: HomeStatus;
    try {
      status = withReadHome(options, (home) => describeHome(home));
    } catch (error) {
      throw notAHome(error, resolveHomePath(options.home));
    }
    if (options.json) printJson(status);
    else process.stdout.write(`${renderStatus(status)}\n`);
    const unhealthy = status.databases.some((d) => d.quickCheck !== "ok");
    if (unhealthy) process.exitCode = 4;
  });
}
