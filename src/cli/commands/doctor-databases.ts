import { checkHomeDatabases, type DatabaseHealth } from "../../doctor/database-health.js";
import { type SalvageReport, salvageDatabase } from "../../doctor/salvage.js";
import { resolveHomePath } from "../../home.js";
import { cleanCell, printJson, renderTable } from "../output.js";

function damagedOf(home: string | undefined): DatabaseHealth[] {
  return checkHomeDatabases(resolveHomePath(home)).filter((db) => db.status === "damaged");
}

function renderDamaged(damaged: readonly DatabaseHealth[]): string {
  const lines = [
    "Damaged databases (quarantined: nothing opens them until they are salvaged):",
    ...damaged.map((db) => `  ${db.path}: ${cleanCell(db.problems[0] ?? "damaged")}`),
    "",
    "Run `agentstate doctor --fix` (with the gateway stopped) to salvage every readable row into a",
    "new database; the damaged file is kept beside it, renamed, never deleted.",
  ];
  return lines.join("\n");
}

/**
 * `doctor` without --fix: checks every database of the home first. A damaged one is reported and
 * quarantined (exit 4); the legacy plan needs readable databases, so it waits for the salvage.
 */
export function reportDamagedDatabases(options: { home?: string; json?: boolean }): boolean {
  const damaged = damagedOf(options.home);
  if (damaged.length === 0) return false;
  if (options.json) printJson({ damaged });
  else process.stdout.write(`${renderDamaged(damaged)}\n`);
  process.exitCode = 4;
  return true;
}

/** `doctor --fix`: salvages every damaged database of the home before anything else runs. */
export function salvageDamagedDatabases(options: { home?: string }): SalvageReport[] {
  return damagedOf(options.home).map((db) => salvageDatabase(db.path, db.role));
}

export function renderSalvage(reports: readonly SalvageReport[]): string {
  const out: string[] = [];
  for (const report of reports) {
    out.push(`Salvaged ${report.path} (${report.recovered} rows); the damaged file is kept at`);
    out.push(`  ${report.keptAt}`);
    const rows = report.tables.filter((t) => t.recovered > 0 || t.lost !== 0);
    out.push(
      renderTable(rows, [
        { header: "TABLE", value: (t) => t.table },
        { header: "RECOVERED", value: (t) => t.recovered, align: "right" },
        { header: "LOST", value: (t) => t.lost, align: "right" },
      ]),
      "",
    );
  }
  return out.join("\n");
}
