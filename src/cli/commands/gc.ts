import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import { parseByteSize } from "../../format-bytes.js";
import { collectGarbage } from "../../gc/collect-garbage.js";
import { loadRetention, type MaintenanceOverrides } from "../../maintenance/policy.js";
import { checkRetention, type RetentionOptions } from "../../stores/retention.js";
import {
  addExamples,
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withHome,
} from "../common.js";
import { printJson } from "../output.js";
import { renderGc, renderPlan } from "./gc-render.js";

const DAY_MS = 24 * 60 * 60 * 1000;

interface GcFlags extends HomeOptions, JsonOption {
  keepDays?: string;
  keepInputs?: string;
  keepReceipts?: string;
  vacuum?: boolean;
  plan?: boolean;
  coldAfter?: string;
  pruneAfter?: string;
  budget?: string;
  keepRecent?: string;
  warn?: boolean;
}

function parseDays(flag: string, text: string): number {
  const days = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(days)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${flag} must be a number of days, got ${JSON.stringify(text)}`,
    );
  }
  return days;
}

/** The flags that override the home's maintenance policy for this run. */
function overridesOf(options: GcFlags): MaintenanceOverrides {
  const given: MaintenanceOverrides = {};
  if (options.coldAfter !== undefined)
    given.coldAfterDays = parseDays("--cold-after", options.coldAfter);
  if (options.pruneAfter !== undefined)
    given.pruneAfterDays = parseDays("--prune-after", options.pruneAfter);
  if (options.keepRecent !== undefined) {
    given.keepRecent = parseInteger("--keep-recent", options.keepRecent, 0, 1e9);
  }
  if (options.budget !== undefined) {
    const bytes = parseByteSize(options.budget);
    if (bytes === undefined) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `--budget must be a size such as 500MB, 2GiB or a number of bytes, got ${JSON.stringify(options.budget)}`,
      );
    }
    given.maxDiskBytes = bytes;
  }
  if (options.warn) given.mode = "warn";
  return given;
}

/** The retention the flags give, for this run, over the home's (agentstate.json, then the defaults). */
function retentionFlags(options: GcFlags): RetentionOptions {
  const given: RetentionOptions = {};
  if (options.keepDays !== undefined) {
    const days = parseInteger("--keep-days", options.keepDays, 0, 100_000);
    given.inputsMaxAgeMs = days * DAY_MS;
    given.receiptsMaxAgeMs = days * DAY_MS;
  }
  if (options.keepInputs !== undefined) {
    given.inputsPerSession = parseInteger("--keep-inputs", options.keepInputs, 0, 1e9);
  }
  if (options.keepReceipts !== undefined) {
    given.receiptsPerQueue = parseInteger("--keep-receipts", options.keepReceipts, 0, 1e9);
  }
  return given;
}

export function registerGc(program: Command): void {
  const command = program
    .command("gc")
    .description(
      "apply the home's maintenance policy (agentstate.json: idle sessions to cold storage, archived or ended ones pruned, the disk budget; --plan shows it first), then delete expired rows (TTL) from the global database and every agent database, and completed inputs and settled delivery receipts past retention; refresh each agent's recorded size and last-seen time; run PRAGMA quick_check on each agent database, one at a time, and record the result for `status`",
    )
    .option(
      "--keep-days <days>",
      "keep completed inputs and sent or failed deliveries this many days after they finished (default 30)",
    )
    .option(
      "--keep-inputs <n>",
      "keep at most this many completed inputs per session key, the latest (default 1000)",
    )
    .option(
      "--keep-receipts <n>",
      "keep at most this many sent or failed deliveries per queue, the latest (default 100000)",
    )
    .option("--plan", "print what the maintenance policy would move and prune, and change nothing")
    .option(
      "--cold-after <days>",
      "this run: move hot sessions idle this many days to cold storage",
    )
    .option(
      "--prune-after <days>",
      "this run: delete archived or ended sessions idle this many days",
    )
    .option(
      "--keep-recent <n>",
      "this run: never prune the n most recent sessions of a session key",
    )
    .option(
      "--budget <bytes>",
      "this run: the home's byte budget (500MB, 2GiB, …), counting every file under the home; above it, work down to 80% of it",
    )
    .option("--warn", "this run: report what the maintenance policy would do, change nothing")
    .option(
      "--vacuum",
      "then merge each full-text index (the space of deleted or cold-moved events' index rows) and give each database's free space back to the filesystem; a database created by an older release is first switched to incremental auto-vacuum by rewriting it whole (one transaction, holding its write lock meanwhile: best with the gateway stopped). Progress per database on stderr",
    );
  addExamples(command, [
    "agentstate gc",
    "agentstate gc --vacuum",
    "agentstate gc --home ~/.agentstate --json",
    "agentstate gc --keep-days 7 --keep-inputs 200",
    "agentstate gc --plan",
    "agentstate gc --plan --json --cold-after 30 --budget 2GiB",
    "agentstate gc --prune-after 90 --keep-recent 3",
  ]);
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: GcFlags) => {
    const flags = retentionFlags(options);
    const overrides = overridesOf(options);
    if (options.plan) {
      const plan = withHome(options, false, (home) => home.maintenance.plan({ overrides }));
      if (options.json) printJson(plan);
      else process.stdout.write(`${renderPlan(plan)}\n`);
      return;
    }
    const onProgress = (line: string) => process.stderr.write(`${line}\n`);
    const report = withHome(options, false, (home) =>
      collectGarbage(home, Date.now(), {
        retention: checkRetention({ ...loadRetention(home.path), ...flags }),
        vacuum: options.vacuum === true,
        onProgress,
        maintenance: { overrides },
      }),
    );
    if (options.json) printJson(report);
    else process.stdout.write(`${renderGc(report)}\n`);
    const failed = report.maintenance?.outcomes.some((o) => o.status === "failed");
    if (failed || report.databases.some((db) => db.error !== undefined)) process.exitCode = 1;
    if (report.databases.some((db) => db.quickCheck !== undefined && db.quickCheck !== "ok")) {
      process.exitCode = 4;
    }
  });
}
