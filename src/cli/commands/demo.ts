import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { ensurePrivateDir } from "../../db/files.js";
import { LEGACY_SOURCE_KINDS } from "../../doctor/discover.js";
import { type PlannedSource, planMigration } from "../../doctor/plan.js";
import { openStateHome } from "../../home.js";
import { describeHome } from "../../status/describe-home.js";
import { addJsonOption, type JsonOption } from "../common.js";
import { formatBytes, printJson, renderTable } from "../output.js";
import { packageRoot } from "../package-root.js";
import { renderStatus } from "./status.js";

interface DemoOptions extends JsonOption {
  dir?: string;
}

function summarize(sources: readonly PlannedSource[]) {
  const byKind = new Map<
    string,
    { kind: string; files: number; bytes: number; records: number | null }
  >();
  for (const source of sources) {
    const row = byKind.get(source.kind) ?? { kind: source.kind, files: 0, bytes: 0, records: null };
    row.files++;
    row.bytes += source.bytes;
    if (source.records !== null) row.records = (row.records ?? 0) + source.records;
    byKind.set(source.kind, row);
  }
  return [...byKind.values()];
}

export function registerDemo(program: Command): void {
  const command = program
    .command("demo")
    .description(
      "copy the bundled sample legacy home to a temp dir, open it as a home and show what it holds",
    )
    .option("--dir <dir>", "work in this directory instead of a new temp dir");
  addJsonOption(command);
  command.action((options: DemoOptions) => {
    const workDir = options.dir ?? mkdtempSync(join(tmpdir(), "agentstate-demo-"));
    const homePath = join(workDir, "home");
    ensurePrivateDir(workDir);
    cpSync(join(packageRoot(), "examples", "legacy-home"), homePath, { recursive: true });

    const sources = planMigration(homePath).sources;
    const agentIds = [...new Set(sources.map((s) => s.agentId).filter((id): id is string => !!id))];
    const home = openStateHome({ home: homePath });
    let status: ReturnType<typeof describeHome>;
    try {
      for (const agentId of agentIds) home.agent(agentId);
      home.kv.set("demo", "opened-at", new Date().toISOString());
      status = describeHome(home);
    } finally {
      home.close();
    }

    if (options.json) {
      printJson({ home: homePath, legacySources: sources, status });
      return;
    }
    const out: string[] = [];
    out.push(`agentstate demo: sample legacy home copied to ${homePath}`, "");
    out.push("Legacy files found (read-only scan):");
    out.push(
      renderTable(summarize(sources), [
        {
          header: "KIND",
          value: (r) => LEGACY_SOURCE_KINDS[r.kind as keyof typeof LEGACY_SOURCE_KINDS].label,
        },
        { header: "FILES", value: (r) => r.files, align: "right" },
        { header: "RECORDS", value: (r) => r.records ?? "-", align: "right" },
        { header: "SIZE", value: (r) => formatBytes(r.bytes), align: "right" },
      ]),
    );
    out.push("", `Agents: ${agentIds.join(", ")}. Each gets its own SQLite database:`, "");
    out.push(renderStatus(status.home, status.databases));
    out.push("", `Try: agentstate status --home ${homePath}`);
    process.stdout.write(`${out.join("\n")}\n`);
  });
}
