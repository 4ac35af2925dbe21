import type { Command } from "commander";
import {
  USAGE_GROUPINGS,
  type UsageGroup,
  type UsageGrouping,
  type UsageReport,
} from "../../api/usage-api.js";
import { StateError } from "../../db/errors.js";
import { checkEnum } from "../../memory/taxonomy.js";
import {
  addHomeOption,
  addJsonOption,
  agentOf,
  type HomeOptions,
  type JsonOption,
  withReadHome,
} from "../common.js";
import { printJson } from "../output.js";
import { sanitize } from "../render/style.js";
import { printSessionUsage, sessionUsage } from "./usage-session.js";
import { modelName, renderUsageTable } from "./usage-table.js";

interface UsageOptions extends HomeOptions, JsonOption {
  agent?: string;
  since?: string;
  until?: string;
  by: string;
  session?: string;
}

/** Unix milliseconds as digits, else anything `Date.parse` reads (ISO 8601). */
function parseTime(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^-?\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isSafeInteger(ms)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${flag} must be an ISO 8601 time or Unix milliseconds, got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

const KEY_HEADERS: Record<UsageGrouping, string> = { day: "DAY", model: "MODEL", agent: "AGENT" };

function keyOf(by: UsageGrouping, group: UsageGroup): string {
  if (by === "day") return group.day ?? "";
  if (by === "agent") return sanitize(group.agentId ?? "");
  return modelName(group.provider, group.model);
}

function render(report: UsageReport): string {
  const rows = [
    ...report.groups.map((g) => ({ key: keyOf(report.by, g), g })),
    { key: "TOTAL", g: report.totals },
  ];
  return renderUsageTable(KEY_HEADERS[report.by], rows);
}

/** Says what the cost column leaves out, when it leaves anything out. */
function costNote(report: UsageReport): string {
  const { messages, pricedMessages } = report.totals;
  if (messages === pricedMessages) return "";
  return `cost: the costs messages recorded; ${messages - pricedMessages} of ${messages} assistant messages recorded none (no price is estimated)\n`;
}

const HELP = `
Read from each agent's daily rollups (UTC days), never from the events: as fast on a million
events as on a hundred. --since and --until take whole UTC days: the days holding those times,
both included. Tokens and cost are the usage the assistant messages recorded; a message without a
recorded cost adds none (no price is estimated), and the note under the table counts them.

--session KEY|ID reports one session instead (of --agent, default the home's only agent, else
main): a session id, else a session key's current session. It is summed from that session's own
events, read from its archive when it is cold, by model, with total tokens (input, output, cache
read and cache write).

Examples:
  agentstate usage
  agentstate usage --session agent:main:main
  agentstate usage --by model --since 2026-05-01
  agentstate usage --by agent --since 2026-05-01 --until 2026-05-31
  agentstate usage --agent main --by day --json`;

/** --by, --since and --until group or select days, which one session's report has not. */
function rejectWithSession(command: Command): void {
  const given = ["since", "until", "by"].filter(
    (name) => command.getOptionValueSource(name) === "cli",
  );
  if (given.length > 0) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `--session reports one session by model; it takes no --${given.join(", --")}`,
    );
  }
}

export function registerUsage(program: Command): void {
  const command = program
    .command("usage")
    .description("token usage, recorded cost and events per day, model or agent, with totals")
    .option(
      "--agent <id>",
      "only this agent (default: every agent; with --session, the only one, else main)",
    )
    .option("--since <time>", "from the UTC day holding this ISO time or Unix ms")
    .option("--until <time>", "through the UTC day holding this ISO time or Unix ms")
    .option("--by <grouping>", `one row per ${USAGE_GROUPINGS.join(", ")}`, "day")
    .option("--session <key|id>", "one session's usage by model (a session id or key)")
    .addHelpText("after", HELP);
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: UsageOptions) => {
    if (options.session !== undefined) {
      const given = options.session;
      rejectWithSession(command);
      const report = withReadHome(options, (home) => sessionUsage(home, options.agent, given));
      printSessionUsage(report, options.json);
      return;
    }
    const by = checkEnum("--by", options.by, USAGE_GROUPINGS);
    const since = parseTime("--since", options.since);
    const until = parseTime("--until", options.until);
    const report = withReadHome(options, (home) => {
      const agentId =
        options.agent === undefined ? undefined : agentOf(home, options.agent).agentId;
      return home.usage.query({ agentId, since, until, by });
    });
    if (options.json) {
      printJson(report);
      return;
    }
    if (report.groups.length === 0) {
      process.stdout.write("no events\n");
      return;
    }
    process.stdout.write(`${render(report)}\n${costNote(report)}`);
  });
}
