import type { StateHome } from "../../home.js";
import type { LegacySource } from "../discover.js";

export type SourceProblem = {
  /** 1-based line of the file, for line-oriented sources. */
  line: number | null;
  /** The key (session key, job id …) at fault, for keyed sources. */
  key: string | null;
  reason: string;
};

export interface SourceScan {
  /** Records the source holds that can be imported. */
  records: number;
  problems: SourceProblem[];
  /** Things worth knowing that are not problems (unknown record types kept verbatim, …). */
  notes: string[];
}

export interface ImportOutcome {
  /** Records now present in the database from this source (new plus already there). */
  records: number;
  /** Of those, how many were already present (a rerun, or an archive identical to its live file). */
  alreadyPresent: number;
  problems: SourceProblem[];
  /** Warnings that lose nothing (the source still completes and is removed), for the report. */
  notes?: string[];
}

export interface ImportContext {
  home: StateHome;
  source: LegacySource & { absPath: string };
  /** Every source of this migration, for importers that need siblings (archive vs live file). */
  allSources: readonly LegacySource[];
}

/** What the databases already hold, read-only: for the plan of a source imported in part before. */
export interface ImportedRecords {
  hasTranscriptEvent(agentId: string, sessionId: string, eventId: string): boolean;
}

/** How one kind of legacy file is scanned (read-only) and imported. */
export interface KindHandler {
  scan(absPath: string, source: LegacySource): SourceScan;
  /**
   * The records a sound file of this kind holds, counted without parsing them (for the plan
   * `--fix` runs; the import then finds the problems), in one read that hands every byte to
   * `onBytes`. Kinds without it are scanned in full.
   */
  count?(absPath: string, onBytes: (bytes: Buffer) => void): number;
  import(context: ImportContext): ImportOutcome;
  /**
   * The good records of the file that are not in the database yet, for a source an earlier run
   * imported in part. Kinds without it count the whole file.
   */
  pending?(absPath: string, source: LegacySource, imported: ImportedRecords): number;
}

export const MAX_LISTED_PROBLEMS = 100;

export function problem(
  line: number | null,
  reason: string,
  key: string | null = null,
): SourceProblem {
  return { line, key, reason };
}
