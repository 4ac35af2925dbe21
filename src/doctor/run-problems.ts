import type { StateHome } from "../home.js";
import type { QuarantinedLine } from "../stores/global/migration-quarantine-store.js";
import type { JsonValue } from "../stores/json.js";

/** One problem of a migration run, by file and line (or key), as `doctor --history` shows it. */
export interface RunProblem {
  path: string;
  line: number | null;
  key: string | null;
  reason: string;
  quarantined: boolean;
}

/**
 * Each problem of a run. A run records its own; runs of older releases did not, so their
 * sources' reports (as their last run left them) stand in.
 */
export function problemsOfRun(home: StateHome, runId: string): RunProblem[] {
  const own = home.migrations.getRun(runId).report.problems;
  if (Array.isArray(own)) return own as unknown as RunProblem[];
  return home.migrations.sourcesOfRun(runId).flatMap((source) => {
    const listed: JsonValue | undefined = source.report.problems;
    if (!Array.isArray(listed)) return [];
    return (listed as unknown as Omit<RunProblem, "path" | "quarantined">[]).map((p) => ({
      path: source.path,
      line: p.line ?? null,
      key: p.key ?? null,
      reason: p.reason,
      quarantined: false,
    }));
  });
}

/** A quarantined line as JSON: its bytes in base64, since they need not be text at all. */
export function quarantinedLineJson(line: QuarantinedLine) {
  return {
    path: line.path,
    line: line.line,
    reason: line.reason,
    kind: line.kind,
    runId: line.runId,
    quarantinedAt: line.quarantinedAt,
    sha256: line.sha256,
    sourceSha256: line.sourceSha256,
    bytes: line.bytes.length,
    base64: line.bytes.toString("base64"),
  };
}
