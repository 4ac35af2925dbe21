import type { Command } from "commander";
import { type DatabaseStatus, describeHome } from "../../status/describe-home.js";
import {
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  withHome,
} from "../common.js";
import { formatBytes, printJson, renderTable } from "../output.js";

export function renderStatus(home: string, databases: readonly DatabaseStatus[]): string {
  const lines = [`home: ${home}`, ""];
  lines.push(
    renderTable(databases, [
      { header: "ROLE", value: (d) => d.role },
      { header: "AGENT", value: (d) => d.agentId ?? "-" },
      { header: "SIZE", value: (d) => formatBytes(d.bytes), align: "right" },
      { header: "SCHEMA", value: (d) => d.schemaVersion, align: "right" },
      { header: "CHECK", value: (d) => d.quickCheck },
      { header: "PATH", value: (d) => d.path },
    ]),
  );
  for (const db of databases) {
    const counts = Object.entries(db.tables)
      .map(([table, rows]) => `${table}=${rows}`)
      .join(" ");
    lines.push("", `${db.agentId ?? "global"} rows: ${counts}`);
  }
  return lines.join("\n");
}

export function registerStatus(program: Command): void {
  const command = program
    .command("status")
    .description(
      "describe a home: every database, its size, schema version, health and row counts",
    );
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: HomeOptions & JsonOption) => {
    const status = withHome(options, false, (home) => describeHome(home));
    if (options.json) printJson(status);
    else process.stdout.write(`${renderStatus(status.home, status.databases)}\n`);
    const unhealthy = status.databases.some((d) => d.quickCheck !== "ok");
    if (unhealthy) process.exitCode = 4;
  });
}
