import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { verifyBackup } from "../../backup/verify-backup.js";
import { isStateError } from "../../db/errors.js";
import { ensurePrivateDir } from "../../db/files.js";
import { LEGACY_SOURCE_KINDS } from "../../doctor/discover.js";
import { runDoctorFix } from "../../doctor/fix.js";
import { type PlannedSource, planMigration } from "../../doctor/plan.js";
import { openStateHome, type StateHome } from "../../home.js";
import { DEFAULT_PORT, type RunningServer, startServer } from "../../server/start-server.js";
import { describeHome } from "../../status/describe-home.js";
import { runDemoConversation } from "../../worker/demo-conversation.js";
import { addExamples, addJsonOption, type JsonOption } from "../common.js";
import { formatBytes, printJson, renderTable } from "../output.js";
import { packageRoot } from "../package-root.js";
import { renderConversation } from "../render/conversation.js";
import { outputWidth, shouldColor } from "../render/style.js";
import { describeSchedule } from "./cron.js";
import { serveUntilSignal } from "./serve-until-signal.js";
import { renderStatus } from "./status.js";
import { renderHits } from "./transcript.js";

interface DemoOptions extends JsonOption {
  dir?: string;
  /** commander's `--no-serve`. */
  serve: boolean;
}

const DEMO_QUERY = "basil";
const EXCERPT_EVENTS = 6;

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

/** What the migrated home now answers: the busiest session's last turns, a search, the cron jobs. */
function tour(home: StateHome) {
  const scopes = home.agent("main", { create: false }).transcripts.listScopes();
  const busiest = [...scopes].sort((a, b) => b.eventCount - a.eventCount)[0];
  const excerpt = busiest
    ? home.agent("main", { create: false }).transcripts.tail(busiest.sessionId, EXCERPT_EVENTS)
    : [];
  return {
    status: describeHome(home),
    session: busiest ?? null,
    excerpt,
    search: home.transcripts.search(DEMO_QUERY, { limit: 3 }),
    cron: home.cron.list(),
  };
}

/**
 * The conversation the runtime just stored, the file its tools wrote into the VFS, and memory
 * kept about it: a topic pointing at its user turns, two facts, and what a prompt would recall.
 */
function liveTurns(home: StateHome, sessionId: string) {
  const main = home.agent("main", { create: false });
  const scratch = main.vfs.namespace().readFile("/lists/shopping.md").toString("utf8").trimEnd();
  const events = main.transcripts.read(sessionId);
  const scope = { agentId: "main", sessionId };
  home.memory.createTopic(scope, {
    topicId: "weekend-shopping",
    title: "Weekend shopping list",
    summaryShort: "A list in /lists/shopping.md: coffee, bread, tomatoes, oranges.",
    openLoops: ["check the list before Saturday"],
    labels: ["shopping"],
  });
  for (const { event } of events) {
    const message = event.message as { role?: string } | undefined;
    if (message?.role === "user") {
      home.memory.link("main", "weekend-shopping", { eventId: event.id, reason: "user turn" });
    }
  }
  home.memory.switchTopic(scope, "weekend-shopping");
  home.memory.upsertFact("main", {
    scope: "user",
    key: "shop",
    category: "preference",
    value: "Prefers the Saturday farmers' market",
    recallPolicy: "topic_bound",
    tags: ["shopping"],
  });
  home.memory.upsertFact("main", {
    scope: "user",
    key: "grocery.api-key",
    category: "account",
    value: "env:GROCERY_API_KEY",
    sensitivity: "secret_ref",
    recallPolicy: "always",
  });
  const recall = home.memory.recall({ ...scope, query: "shopping list" });
  return { events, scratch, recall: recall.text };
}

/** Serves the dashboard on the demo's home (the usual port, else a free one) until Ctrl-C. */
async function serveDashboard(homePath: string): Promise<void> {
  let server: RunningServer;
  try {
    server = await startServer({ home: homePath, port: DEFAULT_PORT });
  } catch (error) {
    if (!isStateError(error, "E_CONFLICT")) throw error;
    server = await startServer({ home: homePath, port: 0 });
  }
  process.stdout.write(`\n8. The dashboard of this home: ${server.url}  (Ctrl-C to stop)\n`);
  await serveUntilSignal(server);
}

export function registerDemo(program: Command): void {
  const command = program
    .command("demo")
    .description(
      "migrate a copy of the bundled sample legacy home (backup, import, verify) and show what the databases now answer",
    )
    .option("--dir <dir>", "work in this directory instead of a new temp dir")
    .option("--no-serve", "exit at the end instead of serving the dashboard on the migrated home");
  addExamples(command, [
    "agentstate demo",
    "agentstate demo --dir /tmp/agentstate-demo --no-serve",
    "agentstate demo --json",
  ]);
  addJsonOption(command);
  command.action(async (options: DemoOptions) => {
    const workDir = options.dir ?? mkdtempSync(join(tmpdir(), "agentstate-demo-"));
    const homePath = join(workDir, "home");
    ensurePrivateDir(workDir);
    cpSync(join(packageRoot(), "examples", "legacy-home"), homePath, { recursive: true });

    const plan = planMigration(homePath);
    const report = await runDoctorFix({ home: homePath });
    const verified = report.backupPath ? await verifyBackup(report.backupPath) : null;
    const conversation = await runDemoConversation(homePath, "main");
    const home = openStateHome({ home: homePath, create: false });
    let seen: ReturnType<typeof tour>;
    let live: ReturnType<typeof liveTurns>;
    try {
      seen = tour(home);
      live = liveTurns(home, conversation.sessionId);
    } finally {
      home.close();
    }

    if (options.json) {
      printJson({
        home: homePath,
        legacySources: plan.sources,
        doctor: report,
        backup: verified && { archive: verified.archive, ok: verified.ok },
        conversation: {
          sessionId: conversation.sessionId,
          sessionKey: conversation.sessionKey,
          turns: conversation.turns.map((t) => ({ status: t.status, mode: t.mode, text: t.text })),
          scratch: live.scratch,
          recall: live.recall,
        },
        ...seen,
      });
      return;
    }
    const out: string[] = [];
    out.push(`agentstate demo: sample legacy home copied to ${homePath}`, "");
    out.push("1. Legacy files found (agentstate doctor, read-only):");
    out.push(
      renderTable(summarize(plan.sources), [
        {
          header: "KIND",
          value: (r) => LEGACY_SOURCE_KINDS[r.kind as keyof typeof LEGACY_SOURCE_KINDS].label,
        },
        { header: "FILES", value: (r) => r.files, align: "right" },
        { header: "RECORDS", value: (r) => r.records ?? "-", align: "right" },
        { header: "SIZE", value: (r) => formatBytes(r.bytes), align: "right" },
      ]),
    );
    const t = report.totals;
    out.push("", "2. Migrated (agentstate doctor --fix):");
    out.push(
      `   backup ${report.backupPath} — verified: ${verified?.ok ? "ok" : "FAILED"}`,
      `   ${t.imported} files imported (${t.records} records), ${t.warning} with warnings, ${t.failed} failed; imported files removed, config and credentials left as files`,
    );
    out.push("", "3. One SQLite database per agent, plus the control plane:", "");
    out.push(renderStatus(seen.status));
    if (seen.session) {
      out.push("", `4. The last turns of session ${seen.session.sessionId} (agent main):`, "");
      out.push(renderConversation(seen.excerpt, { color: shouldColor(), width: outputWidth() }));
    }
    out.push("", `5. Full-text search for "${DEMO_QUERY}":`, "");
    out.push(seen.search.length > 0 ? renderHits(seen.search) : "   no hits");
    out.push("", "6. Cron jobs, now rows with their next run:", "");
    out.push(
      renderTable(seen.cron, [
        { header: "ID", value: (j) => j.jobId },
        { header: "NAME", value: (j) => j.name ?? "-" },
        { header: "SCHEDULE", value: (j) => describeSchedule(j.schedule) },
        { header: "ENABLED", value: (j) => (j.enabled ? "yes" : "no") },
        { header: "LAST", value: (j) => j.lastStatus ?? "-" },
      ]),
    );
    const modes = [...new Set(conversation.turns.map((t) => t.mode))].join(", ");
    out.push(
      "",
      `7. A new conversation, run by the agent runtime (${conversation.turns.length} turns, ${modes}), stored as it happened:`,
      "",
    );
    out.push(renderConversation(live.events, { color: shouldColor(), width: outputWidth() }));
    out.push("", "   The agent's scratch filesystem (SQLite) now holds:");
    for (const line of live.scratch.split("\n")) out.push(`     ${line}`);
    out.push(
      "",
      "   What a later prompt recalls about it (a topic over its turns, facts; a secret only by reference):",
    );
    for (const line of live.recall.split("\n")) out.push(line === "" ? "" : `     ${line}`);
    out.push("", "Try:");
    out.push(`  agentstate status --home ${homePath}`);
    if (seen.session) {
      out.push(
        `  agentstate transcript show ${seen.session.sessionId} --agent main --home ${homePath}`,
      );
    }
    out.push(`  agentstate transcript search ${DEMO_QUERY} --home ${homePath}`);
    out.push(`  agentstate backup list --home ${homePath}`);
    out.push(
      `  agentstate memory recall --agent main --session ${conversation.sessionId} --home ${homePath}`,
    );
    process.stdout.write(`${out.join("\n")}\n`);
    if (options.serve) await serveDashboard(homePath);
  });
}
