import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { StateError } from "./errors.js";
import { FILE_MODE } from "./files.js";

/**
 * A database found damaged is quarantined by a marker file beside it, so that nothing (a gateway, a
 * CLI command, a read-only one too) keeps reading wrong answers from it or writing into it until
 * `agentstate doctor --fix` has salvaged it. A file, not a row: the damaged database may be the
 * global one, and the marker must be readable without opening any database.
 */
export function damageMarkerPath(dbPath: string): string {
  return `${dbPath}.damaged`;
}

export interface DamageMarker {
  foundAt: number;
  /** What the integrity check said, first lines. */
  problems: string[];
}

export function readDamageMarker(dbPath: string): DamageMarker | null {
  const marker = damageMarkerPath(dbPath);
  if (!existsSync(marker)) return null;
  try {
    const parsed = JSON.parse(readFileSync(marker, "utf8")) as Partial<DamageMarker>;
    return {
      foundAt: typeof parsed.foundAt === "number" ? parsed.foundAt : 0,
      problems: Array.isArray(parsed.problems) ? parsed.problems.map(String) : [],
    };
  } catch {
    // A marker that cannot be read still quarantines: its presence is what counts.
    return { foundAt: 0, problems: [] };
  }
}

/** Refuses a quarantined database with E_DAMAGED; costs one stat when there is no marker. */
export function assertNotDamaged(dbPath: string): void {
  const marker = readDamageMarker(dbPath);
  if (marker === null) return;
  const what = marker.problems[0] ? ` (${marker.problems[0]})` : "";
  throw new StateError(
    "E_DAMAGED",
    `database ${dbPath} was found damaged${what} and is quarantined: nothing opens it until \`agentstate doctor --fix\` salvages what is readable into a new database (the damaged file is kept beside it)`,
    { details: { path: dbPath, marker: damageMarkerPath(dbPath), problems: marker.problems } },
  );
}

/** Quarantines a database: written to a temporary name and renamed, so it is whole or absent. */
export function markDamaged(dbPath: string, problems: readonly string[], now = Date.now()): void {
  const marker = damageMarkerPath(dbPath);
  const draft = `${marker}.${process.pid}.tmp`;
  const body: DamageMarker = { foundAt: now, problems: problems.slice(0, 20) };
  writeFileSync(draft, `${JSON.stringify(body, null, 2)}\n`, { mode: FILE_MODE });
  renameSync(draft, marker);
}

export function clearDamaged(dbPath: string): void {
  rmSync(damageMarkerPath(dbPath), { force: true });
}
