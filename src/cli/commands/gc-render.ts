import { describeVacuum, type GcReport } from "../../gc/collect-garbage.js";
import type { PlannedAction } from "../../maintenance/plan.js";
import type { EffectiveRules, MaintenancePolicy, RuleKey } from "../../maintenance/policy.js";
import type { ActionOutcome, PlanReport, RunReport } from "../../maintenance/run.js";
import { formatBytes, renderTable } from "../output.js";

const RULES: readonly RuleKey[] = [
  "mode",
  "coldAfterDays",
  "pruneAfterDays",
  "keepRecent",
  "maxDiskBytes",
  "highWaterBytes",
];

function describeRules(rules: EffectiveRules): string {
  return RULES.map((key) => `  ${key}: ${rules[key] ?? "off"} (${rules.sources[key]})`).join("\n");
}

function describePolicy(policy: MaintenancePolicy): string {
  const from = policy.fileFound
    ? policy.file
    : `${policy.file} absent: safe defaults, nothing moved or deleted`;
  const agents = Object.entries(policy.agents).map(
    ([id, rules]) => `agent ${id}:\n${describeRules(rules)}`,
  );
  return [`Policy (${from}):`, describeRules(policy.home), ...agents].join("\n");
}

function perAgent(actions: readonly PlannedAction[]): string[] {
  const ids = [...new Set(actions.map((a) => a.agentId))];
  return ids.map((id) => {
    const of = (kind: string) => actions.filter((a) => a.agentId === id && a.action === kind);
    const sum = (list: readonly PlannedAction[]) =>
      formatBytes(list.reduce((n, a) => n + a.bytes, 0));
    const [cold, prune] = [of("cold"), of("prune")];
    return `${id}: ${cold.length} to move cold (~${sum(cold)}), ${prune.length} to prune (~${sum(prune)})`;
  });
}

function actionTable(actions: readonly (PlannedAction | ActionOutcome)[]): string {
  if (actions.length === 0) return "Nothing to move or prune.";
  return renderTable(actions, [
    { header: "AGENT", value: (a) => a.agentId },
    { header: "SESSION", value: (a) => a.sessionId },
    { header: "ACTION", value: (a) => a.action },
    { header: "~FREES", value: (a) => formatBytes(a.bytes), align: "right" },
    {
      header: "STATUS",
      value: (a) => ("status" in a ? `${a.status}${a.detail ? `: ${a.detail}` : ""}` : "planned"),
    },
    { header: "REASON", value: (a) => a.reason },
  ]);
}

function budgetLines(report: PlanReport | RunReport): string[] {
  const after = "budgetOutcomes" in report ? report.budgetOutcomes : undefined;
  return report.budgets.map((b, i) => {
    const scope = b.agentId === null ? "home" : `agent ${b.agentId}`;
    const outcome = after?.[i];
    const end = outcome
      ? `now ${formatBytes(outcome.bytesAfter)}${outcome.met ? "" : `: above the high-water mark (${outcome.why})`}`
      : `projected ~${formatBytes(b.projectedBytes)}${b.short ? ` (${b.short})` : ""}`;
    return `Budget ${scope}: ${formatBytes(b.bytes)} of max ${formatBytes(b.maxDiskBytes)}, high water ${formatBytes(b.highWaterBytes)}; ${end}`;
  });
}

/** What `gc --plan` prints: the policy and its sources, the bytes counted, the actions, the totals. */
export function renderPlan(report: PlanReport | RunReport): string {
  const rows = "outcomes" in report ? report.outcomes : report.actions;
  const freed = report.actions.reduce((sum, a) => sum + a.bytes, 0);
  const agents = Object.entries(report.bytes.agents).map(([id, n]) => `${id} ${formatBytes(n)}`);
  return [
    describePolicy(report.policy),
    "",
    `Bytes counted: ${report.bytesCounted}: ${formatBytes(report.bytes.total)}${agents.length ? ` (agents: ${agents.join(", ")})` : ""}`,
    "",
    actionTable(rows),
    "",
    ...perAgent(report.actions),
    `Total: ${report.actions.length} action${report.actions.length === 1 ? "" : "s"}, ~${formatBytes(freed)} to free; ${report.protected.length} session${report.protected.length === 1 ? "" : "s"} protected`,
    ...budgetLines(report),
    ...report.unreadable.map((u) => `Not planned: agent ${u.agentId}: ${u.error}`),
  ].join("\n");
}

/** What `gc` prints: its maintenance, then the sweeps. */
export function renderGc(report: GcReport): string {
  const rows = report.databases.flatMap((db) => {
    const name = db.agentId ?? "global";
    if (db.error !== undefined) return [{ name, table: "-", removed: `error: ${db.error}` }];
    const row = (table: string, removed: number) => ({ name, table, removed: String(removed) });
    return [
      ...Object.entries(db.tables ?? {}).map(([table, removed]) => row(table, removed)),
      ...Object.entries(db.retained ?? {}).map(([table, n]) => row(`${table} (retention)`, n)),
      ...(db.coldIndexRows ? [row("transcript_fts (moved cold)", db.coldIndexRows)] : []),
    ];
  });
  const table = renderTable(rows, [
    { header: "DATABASE", value: (r) => r.name },
    { header: "TABLE", value: (r) => r.table },
    { header: "REMOVED", value: (r) => r.removed, align: "right" },
  ]);
  const retained = `${report.retainedTotal} row${report.retainedTotal === 1 ? "" : "s"} past retention removed`;
  const removed = `${report.total} expired row${report.total === 1 ? "" : "s"} removed; ${retained}`;
  const vacuumed = report.databases.flatMap((db) =>
    db.vacuum ? [describeVacuum(db.agentId ?? "global", db.vacuum)] : [],
  );
  const damaged = report.databases.filter((db) => db.quickCheck && db.quickCheck !== "ok");
  const checks = damaged.map((db) => `quick_check ${db.agentId}: ${db.quickCheck}`);
  const maintenance = report.maintenance ? [renderPlan(report.maintenance), ""] : [];
  return [...maintenance, table, "", removed, ...vacuumed, ...checks].join("\n");
}

/** One line per scheduled run (`serve --maintain-every`): what it changed, and any damage found. */
export function summarizeGc(report: GcReport): string {
  const outcomes = report.maintenance?.outcomes ?? [];
  const done = (kind: string) =>
    outcomes.filter((o) => o.action === kind && o.status === "done").length;
  const agents = report.databases.filter((db) => db.agentId !== null);
  const damaged = agents.filter((db) => db.quickCheck !== undefined && db.quickCheck !== "ok");
  const failed = report.databases.filter((db) => db.error !== undefined);
  const parts = [
    `${done("cold")} moved cold`,
    `${done("prune")} pruned`,
    `${report.total} expired and ${report.retainedTotal} retained rows removed`,
    damaged.length === 0
      ? `quick_check ok on ${agents.length - failed.length} agents`
      : `quick_check found damage in ${damaged.map((db) => db.agentId).join(", ")}`,
    ...failed.map((db) => `${db.agentId ?? "global"}: ${db.error}`),
  ];
  return `maintenance: ${parts.join("; ")}`;
}
