import { type ColdIndexRepair, repairColdIndexes } from "../../doctor/cold-index-fix.js";
import { type ColdIndexProblem, checkColdIndexes } from "../../doctor/cold-index-health.js";
import { resolveHomePath } from "../../home.js";
import { cleanCell } from "../output.js";
import { coldIndexProgressReporter } from "./doctor-progress.js";

/** The exit code of a cold index that search cannot rely on, found or left after --fix. */
const DAMAGED_EXIT = 4;

/** `doctor` without --fix: each agent's cold index checked against its claims (exit 4 if one fails). */
export function checkColdIndexesOf(options: { home?: string }): ColdIndexProblem[] {
  const problems = checkColdIndexes(resolveHomePath(options.home));
  if (problems.length > 0) process.exitCode = DAMAGED_EXIT;
  return problems;
}

/** The problems, then a blank line; nothing when there are none. */
export function renderColdIndexProblems(problems: readonly ColdIndexProblem[]): string {
  if (problems.length === 0) return "";
  const lines = [
    "Cold search indexes that do not hold what their agent databases claim:",
    ...problems.map((p) => `  ${p.code}: ${cleanCell(p.message)}`),
    "",
    "Run `agentstate doctor --fix` (with the gateway stopped) to rebuild each from its cold sessions'",
    "archives; a file it replaces is kept beside it, renamed, never deleted.",
    "",
    "",
  ];
  return lines.join("\n");
}

/**
 * `doctor --fix`: rebuilds every cold index that fails its check, with a progress bar on a
 * terminal; a rebuild that failed leaves exit 4 unless the import sets another code.
 */
export function repairColdIndexesOf(options: { home?: string; json?: boolean }): ColdIndexRepair[] {
  const progress = options.json ? undefined : coldIndexProgressReporter();
  try {
    const repairs = repairColdIndexes(resolveHomePath(options.home), {
      ...(progress ? { onProgress: progress.update } : {}),
    });
    if (repairs.some((r) => r.status === "failed")) process.exitCode = DAMAGED_EXIT;
    return repairs;
  } finally {
    progress?.stop();
  }
}

export function renderColdIndexRepairs(repairs: readonly ColdIndexRepair[]): string {
  const out: string[] = [];
  for (const r of repairs) {
    const agent = `agent "${r.agentId}"`;
    if (r.status === "failed") {
      out.push(`Could not rebuild the cold search index of ${agent} (${r.path}); it is as it was:`);
      out.push(`  ${cleanCell(r.error ?? "")}`);
    } else {
      out.push(
        `Rebuilt the cold search index of ${agent} from its cold sessions (${r.sessions} sessions, ${r.rows} rows): ${r.path}`,
      );
      if (r.keptAt !== null) out.push(`  the file it replaced is kept at ${r.keptAt}`);
    }
    out.push(`  it was ${r.code}: ${cleanCell(r.problem)}`, "");
  }
  return out.join("\n");
}
