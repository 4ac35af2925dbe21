import type { StateHome } from "../home.js";
import type { SourceProblem } from "./kinds/types.js";
import type { PlannedSource } from "./plan.js";
import { readRawLines } from "./raw-lines.js";

export type QuarantineResult =
  | { ok: true; lines: number; added: number }
  | { ok: false; reason: string };

/**
 * Whether the import read every record the plan counted once the problem lines are set aside. A
 * kind that counts lines counts the bad ones as well; a kind that scans counts only good records.
 */
function accountsForEveryLine(
  source: PlannedSource,
  records: number,
  problemLines: ReadonlySet<number>,
): boolean {
  const expected = source.records ?? 0;
  return records === expected || records + problemLines.size === expected;
}

/**
 * Keeps the lines a source could not import as bytes in `migration_quarantine`, in one global
 * transaction, after the source's good records committed. Refuses (and writes nothing) when a
 * problem has no line, when the counts do not add up, or when the file is no longer the one the
 * plan hashed: the line numbers would then point at other bytes.
 */
export function quarantineProblems(
  home: StateHome,
  runId: string,
  source: PlannedSource,
  records: number,
  problems: readonly SourceProblem[],
): QuarantineResult {
  if (problems.some((p) => p.line === null)) {
    return { ok: false, reason: "a problem is not a line of the file and cannot be quarantined" };
  }
  const reasons = new Map<number, string>();
  for (const p of problems) {
    const line = p.line as number;
    reasons.set(line, reasons.has(line) ? `${reasons.get(line)}; ${p.reason}` : p.reason);
  }
  const wanted = new Set(reasons.keys());
  if (!accountsForEveryLine(source, records, wanted)) {
    return { ok: false, reason: "the records imported and the lines quarantined do not add up" };
  }
  const raw = readRawLines(source.absPath, wanted);
  if (raw.sha256 !== source.sha256 || raw.lines.size !== wanted.size) {
    return { ok: false, reason: "the file changed since it was planned; nothing was quarantined" };
  }
  let added = 0;
  home.db.tx(() => {
    for (const [line, bytes] of raw.lines) {
      const entry = {
        path: source.path,
        line,
        kind: source.kind,
        sourceSha256: raw.sha256,
        reason: reasons.get(line) as string,
        bytes,
        runId,
      };
      if (home.quarantine.add(entry)) added++;
    }
  });
  return { ok: true, lines: wanted.size, added };
}
