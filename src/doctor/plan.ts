import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../db/database.js";
import { StateError } from "../db/errors.js";
import { GLOBAL_DB_RELATIVE_PATH, resolveHomePath } from "../home.js";
import { checkSessionId, validateAgentId } from "../ids.js";
import { MigrationLedgerStore } from "../stores/global/migration-ledger-store.js";
import { discoverLegacySources, LEGACY_SOURCE_KINDS, type LegacySource } from "./discover.js";
import { sha256File, sourceKeyOf } from "./hash.js";
import { openImportedRecords } from "./imported-records.js";
import { KIND_HANDLERS, KIND_ORDER } from "./kinds/registry.js";
import {
  type ImportedRecords,
  MAX_LISTED_PROBLEMS,
  type SourceProblem,
  type SourceScan,
} from "./kinds/types.js";
import { legacyHomeHint, missingHomeHint } from "./legacy-home.js";
import { parseTranscriptFileName } from "./sources/transcript-source.js";

export type PlannedAction = "import" | "skip" | "leave" | "refuse";

export interface PlannedSource extends LegacySource {
  absPath: string;
  targetTable: string | null;
  sha256: string | null;
  sourceKey: string | null;
  /** Records that will be imported; null when the file is not read. */
  records: number | null;
  /** The first problems found (at most 100); `problemCount` has them all. */
  problems: SourceProblem[];
  problemCount: number;
  notes: string[];
  action: PlannedAction;
  /** Why a source is skipped, left or refused. */
  reason: string | null;
}

export interface MigrationPlan {
  home: string;
  sources: PlannedSource[];
  summary: Record<PlannedAction, number> & { records: number; bytes: number };
  /** Rough disk needs of `--fix`: the imported rows and the pre-migration backup. */
  estimate: { databaseBytes: number; backupBytes: number };
  /** When the home holds no legacy source: where the legacy state probably is, or null. */
  hint: string | null;
}

/** What earlier runs left in the ledger and the databases, read-only. */
interface Earlier {
  /** This exact file (same key) was imported completely. */
  imported(sourceKey: string): boolean;
  /** Some version of the file at this path was imported before, completely or in part. */
  touched(path: string): boolean;
  records: ImportedRecords;
}

/**
 * `report`: every source read in full, for the plan shown to the operator (records, problems,
 * notes). `import`: what `--fix` needs before it writes: kinds that can count their records
 * without parsing them do so, and the import itself reports their problems.
 */
type PlanPurpose = "report" | "import";

function sortKey(source: LegacySource): string {
  const order = KIND_ORDER.indexOf(source.kind).toString().padStart(2, "0");
  const name = source.path.split("/").at(-1) ?? "";
  const archivedAt = parseTranscriptFileName(name)?.archivedAt ?? 0;
  return `${source.agentId ?? ""}\0${order}\0${String(archivedAt).padStart(15, "0")}\0${source.path}`;
}

/**
 * Why the ids a source would be imported under cannot be used, checked by the same functions the
 * import's stores apply, so that the plan never promises an import that then fails.
 */
function idProblem(source: LegacySource): string | null {
  const name = source.path.split("/").at(-1) ?? "";
  try {
    if (source.agentId !== null) validateAgentId(source.agentId);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return `agent folder ${JSON.stringify(source.agentId)} is not a valid agent id: ${why}`;
  }
  if (source.kind !== "transcript" && source.kind !== "transcript-archive") return null;
  const sessionId = parseTranscriptFileName(name)?.sessionId;
  try {
    checkSessionId(sessionId);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return `file name ${JSON.stringify(name)} does not give a valid session id: ${why}`;
  }
  return null;
}

function leave(source: PlannedSource, reason: string): PlannedSource {
  return { ...source, action: "leave", reason };
}

function planOne(
  source: LegacySource,
  home: string,
  earlier: Earlier,
  purpose: PlanPurpose,
): PlannedSource {
  const absPath = join(home, source.path);
  const targetTable = LEGACY_SOURCE_KINDS[source.kind].target;
  const base: PlannedSource = {
    ...source,
    absPath,
    targetTable,
    sha256: null,
    sourceKey: null,
    records: null,
    problems: [],
    problemCount: 0,
    notes: [],
    action: "import",
    reason: null,
  };
  if (source.refused) return { ...base, action: "refuse", reason: source.refused };
  const invalid = targetTable === null ? null : idProblem(source);
  if (invalid !== null) return { ...base, action: "refuse", reason: invalid };
  const handler = KIND_HANDLERS[source.kind];
  if (targetTable === null) return leave(base, LEGACY_SOURCE_KINDS[source.kind].label);
  if (!handler) return leave(base, "no importer for this kind in this release; left in place");
  try {
    let sha256: string;
    let scan: SourceScan;
    if (purpose === "import" && handler.count) {
      // One read: the bytes counted are the bytes hashed.
      const hash = createHash("sha256");
      scan = {
        records: handler.count(absPath, (bytes) => hash.update(bytes)),
        problems: [],
        notes: [],
      };
      sha256 = hash.digest("hex");
    } else {
      sha256 = sha256File(absPath);
      scan = handler.scan(absPath, source);
    }
    const sourceKey = sourceKeyOf({ ...source, sha256, targetTable });
    const planned: PlannedSource = {
      ...base,
      sha256,
      sourceKey,
      records: scan.records,
      notes: scan.notes,
      problems: scan.problems.slice(0, MAX_LISTED_PROBLEMS),
      problemCount: scan.problems.length,
    };
    if (earlier.imported(sourceKey)) {
      return { ...planned, action: "skip", reason: "already imported (same file)" };
    }
    return purpose === "report" ? countWhatIsLeft(planned, earlier) : planned;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const code = error instanceof StateError ? ` (${error.code})` : "";
    return { ...base, action: "refuse", reason: `cannot read${code}: ${message}` };
  }
}

/**
 * A file an earlier run imported in part (its good records are in SQLite, its bad lines kept it)
 * counts only the records still missing, so the plan says what a rerun would really add.
 */
function countWhatIsLeft(planned: PlannedSource, earlier: Earlier): PlannedSource {
  const handler = KIND_HANDLERS[planned.kind];
  if (!handler?.pending || !earlier.touched(planned.path)) return planned;
  const left = handler.pending(planned.absPath, planned, earlier.records);
  const note = `imported in part before: ${left} of its ${planned.records ?? 0} records are not in the database yet`;
  return { ...planned, records: left, notes: [note, ...planned.notes] };
}

function openEarlier(home: string): Earlier & { close: () => void } {
  const path = join(home, GLOBAL_DB_RELATIVE_PATH);
  const records = openImportedRecords(home);
  if (!existsSync(path)) {
    return { imported: () => false, touched: () => false, records, close: records.close };
  }
  const db = openDatabase({ path, role: "global", readonly: true });
  const ledger = new MigrationLedgerStore(db);
  return {
    imported: (key) => ledger.findSource(key)?.status === "imported",
    touched: (sourcePath) => ledger.sourcesAtPath(sourcePath).length > 0,
    records,
    close: () => {
      records.close();
      db.close();
    },
  };
}

/** Everything `--fix` would do, computed without changing anything on disk. */
export function planMigration(homeOption?: string): MigrationPlan {
  return plan(homeOption, "report");
}

/**
 * The plan `--fix` carries out: the same sources, actions and hashes as `planMigration`, but a
 * transcript's records are counted as its non-blank lines instead of parsed; the import then
 * reports its problems, and only a file whose every line became a record is removed.
 */
export function planImport(homeOption?: string): MigrationPlan {
  return plan(homeOption, "import");
}

function plan(homeOption: string | undefined, purpose: PlanPurpose): MigrationPlan {
  const home = resolveHomePath(homeOption);
  if (!existsSync(home)) {
    throw new StateError("E_NOT_FOUND", `no such home directory: ${home}; ${missingHomeHint()}`, {
      details: { home },
    });
  }
  const earlier = openEarlier(home);
  let sources: PlannedSource[];
  try {
    sources = discoverLegacySources(home)
      .sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1))
      .map((source) => planOne(source, home, earlier, purpose));
  } finally {
    earlier.close();
  }
  const summary = { import: 0, skip: 0, leave: 0, refuse: 0, records: 0, bytes: 0 };
  for (const source of sources) {
    summary[source.action]++;
    if (source.action === "import") {
      summary.records += source.records ?? 0;
      summary.bytes += source.bytes;
    }
  }
  const allBytes = sources.reduce((sum, s) => sum + s.bytes, 0);
  // Rows, identities and the search index take about twice the JSON they come from.
  return {
    home,
    sources,
    summary,
    estimate: { databaseBytes: summary.bytes * 2, backupBytes: allBytes },
    hint: sources.length === 0 ? legacyHomeHint(home) : null,
  };
}
