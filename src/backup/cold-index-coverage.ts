import { posix } from "node:path";
import type { SqlDriver } from "../db/driver.js";
import { chooseDriver, driverFactory } from "../db/driver-choice.js";
import { SESSION_SPAN } from "../stores/agent/cold-index.js";

// An agent database names the rows of its cold index file that count (agent/0017): a backup
// carries the file's snapshot beside the agent's, and both a backup and `backup verify` check
// that the one holds every row the other claims.

/** A session's claim on the cold index's rows, as an agent database's `cold_index_claims` holds it. */
export interface ColdIndexClaim {
  sessionNo: number;
  /** The claim covers the rows of seqs up to this one. */
  throughSeq: number;
  /** How many rows it covers. */
  rows: number;
}

/** A claim whose rows a cold index does not all hold: it has `found` of them. */
export interface UncoveredClaim extends ColdIndexClaim {
  found: number;
}

/** Where an agent's cold index sits in a backup, relative to the home, beside its database. */
export function coldIndexHomePath(agentHomePath: string): string {
  return posix.join(posix.dirname(agentHomePath), "cold", "index.sqlite");
}

/** An agent database's claims on its cold index, or null when its schema predates them. */
export function readColdIndexClaims(driver: SqlDriver): ColdIndexClaim[] | null {
  const table = driver
    .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'cold_index_claims'")
    .get();
  if (!table) return null;
  return driver
    .prepare<ColdIndexClaim>(
      `SELECT session_no AS sessionNo, through_seq AS throughSeq, rows FROM cold_index_claims
       ORDER BY session_no`,
    )
    .all();
}

function readonlyDriver(path: string): SqlDriver {
  return driverFactory(chooseDriver())(path, { readonly: true, fileMustExist: true });
}

/** `readColdIndexClaims` of an agent snapshot file (none when its schema predates them). */
export function coldIndexClaimsIn(snapshot: string): ColdIndexClaim[] {
  const driver = readonlyDriver(snapshot);
  try {
    return readColdIndexClaims(driver) ?? [];
  } finally {
    driver.close();
  }
}

/**
 * The claims a cold index file (a snapshot, never a live file) does not cover: a claim is covered
 * when the file has exactly `rows` rows in its range, session_no * 2^32 up to `throughSeq`.
 */
export function uncoveredClaims(
  coldIndex: string,
  claims: readonly ColdIndexClaim[],
): UncoveredClaim[] {
  if (claims.length === 0) return [];
  const driver = readonlyDriver(coldIndex);
  try {
    return uncoveredIn(driver, claims);
  } finally {
    driver.close();
  }
}

/** `uncoveredClaims` counted on a connection the caller holds open on the cold index. */
export function uncoveredIn(
  coldIndex: Pick<SqlDriver, "prepare">,
  claims: readonly ColdIndexClaim[],
): UncoveredClaim[] {
  if (claims.length === 0) return [];
  // FTS5's own row-size table, one integer-keyed row per indexed row: counting the virtual table
  // reads every row's text.
  const count = coldIndex.prepare<{ n: number }>(
    "SELECT count(*) AS n FROM cold_fts_docsize WHERE id BETWEEN ? AND ?",
  );
  return claims.flatMap((claim) => {
    const base = claim.sessionNo * SESSION_SPAN;
    const found = count.get(base, base + claim.throughSeq)?.n ?? 0;
    return found === claim.rows ? [] : [{ ...claim, found }];
  });
}

/**
 * What a cold index lacks, after its subject ("it lacks …"): the first few uncovered claims,
 * enough to tell a few lost rows from a wrong file.
 */
export function describeUncovered(
  uncovered: readonly UncoveredClaim[],
  claims: readonly ColdIndexClaim[],
): string {
  const shown = uncovered
    .slice(0, 3)
    .map((claim) => `session ${claim.sessionNo}: ${claim.found} of ${claim.rows} rows`);
  const more =
    uncovered.length > shown.length ? `, and ${uncovered.length - shown.length} more` : "";
  return `lacks search rows the agent database claims for ${uncovered.length} of its ${claims.length} cold sessions (${shown.join(", ")}${more})`;
}
