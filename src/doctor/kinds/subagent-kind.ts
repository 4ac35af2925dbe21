import { isStateError } from "../../db/errors.js";
import type { SubagentRunRecord } from "../../stores/global/subagent-run-store.js";
import { readSubagentRuns } from "../sources/cron-source.js";
import { type ImportOutcome, type KindHandler, problem } from "./types.js";

/**
 * `subagents/runs.json`: each run becomes a `subagent_runs` row with its record kept verbatim. A
 * run the database already has as ended is not taken back to an older, unfinished copy; otherwise
 * the file's record is written (the same record twice changes nothing).
 */
export const subagentRunsKind: KindHandler = {
  scan(absPath) {
    const read = readSubagentRuns(absPath);
    return {
      records: read.records.length,
      problems: read.problems.map((p) => problem(p.line, p.reason, p.key)),
      notes: read.notes,
    };
  },
  import(context) {
    const read = readSubagentRuns(context.source.absPath);
    const outcome: ImportOutcome = {
      records: 0,
      alreadyPresent: 0,
      problems: read.problems.map((p) => problem(p.line, p.reason, p.key)),
    };
    const runs = context.home.subagents;
    context.home.db.tx(() => {
      for (const { runId, record } of read.records) {
        // A run without createdAt would otherwise be stamped with the import time on every rerun.
        const full = {
          ...record,
          createdAt: record.createdAt ?? record.startedAt ?? context.source.mtimeMs,
        };
        const existing = runs.get(runId);
        const same = JSON.stringify(existing?.record) === JSON.stringify(full);
        const wouldReopen = existing?.endedAt != null && typeof record.endedAt !== "number";
        if (existing && (same || wouldReopen)) {
          outcome.alreadyPresent++;
          outcome.records++;
          continue;
        }
        try {
          runs.upsert(full as SubagentRunRecord);
          outcome.records++;
        } catch (error) {
          if (!isStateError(error, "E_INVALID_ARGUMENT")) throw error;
          outcome.problems.push(problem(null, error.message, runId));
        }
      }
    });
    return outcome;
  },
};
