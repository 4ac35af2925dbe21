import { loadBetterSqlite3, openBetterSqlite3 } from "./better-sqlite3-driver.js";
import { DRIVER_NAMES, type DriverFactory, type DriverName } from "./driver.js";
import { StateError } from "./errors.js";
import { loadNodeSqlite, type NodeDatabase, openNodeSqlite } from "./node-sqlite-driver.js";

/** Forces an engine for the whole process: `node` or `better-sqlite3`. */
export const DRIVER_ENV = "AGENTSTATE_SQLITE_DRIVER";

const FACTORIES: Record<DriverName, DriverFactory> = {
  node: openNodeSqlite,
  "better-sqlite3": openBetterSqlite3,
};

/**
 * What the stores need of an engine, tried on a scratch in-memory database: the connection and
 * statement calls the adapter uses, FTS5 with the schema's tokenizer, per-table integrity checks
 * of virtual tables (SQLite 3.44), savepoints, JSON, BLOBs and bigints. A version number alone
 * would not say whether a build left FTS5 out.
 */
function probeNodeDatabase(db: NodeDatabase): void {
  if (typeof db.isTransaction !== "boolean" || typeof db.isOpen !== "boolean") {
    throw new Error("isTransaction/isOpen missing");
  }
  db.exec(`CREATE VIRTUAL TABLE probe_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
    INSERT INTO probe_fts (body) VALUES ('café probe');
    CREATE TABLE probe (id INTEGER PRIMARY KEY, data BLOB, big INTEGER) STRICT;`);
  const found = db
    .prepare("SELECT count(*) AS n FROM probe_fts WHERE probe_fts MATCH 'cafe'")
    .get();
  if (found?.n !== 1) throw new Error("FTS5 does not match");
  db.prepare("SELECT * FROM pragma_integrity_check('probe_fts')").all();
  db.exec("SAVEPOINT probe_sp; ROLLBACK TO probe_sp; RELEASE probe_sp");
  db.prepare("INSERT INTO probe (data, big) VALUES (?, ?)").run(new Uint8Array([1]), 2n ** 40n);
  const named = db.prepare("SELECT :a AS a");
  named.setAllowUnknownNamedParameters(true);
  named.get({ a: 1, unused: 2 });
  const rows = db.prepare("SELECT value FROM json_each(?)").iterate("[1,2]");
  if ([...rows].length !== 2) throw new Error("statement iterate or JSON missing");
}

let nodeProbe: { ok: true } | { ok: false; reason: string } | undefined;

/** Whether this runtime's node:sqlite does all the stores need (probed once per process). */
export function nodeSqliteSupport(): { ok: true } | { ok: false; reason: string } {
  if (nodeProbe) return nodeProbe;
  const sqlite = loadNodeSqlite();
  if (!sqlite) {
    nodeProbe = { ok: false, reason: `Node ${process.versions.node} has no node:sqlite` };
    return nodeProbe;
  }
  let db: NodeDatabase | undefined;
  try {
    db = new sqlite.DatabaseSync(":memory:");
    probeNodeDatabase(db);
    nodeProbe = { ok: true };
  } catch (error) {
    nodeProbe = {
      ok: false,
      reason: `node:sqlite on Node ${process.versions.node} lacks what agentstate needs: ${(error as Error).message}`,
    };
  } finally {
    db?.close();
  }
  return nodeProbe;
}

/** `undefined` for an empty choice; the name, checked, otherwise. */
export function parseDriverName(value: unknown, where: string): DriverName | undefined {
  if (value === undefined || value === "") return undefined;
  if (typeof value === "string" && (DRIVER_NAMES as readonly string[]).includes(value)) {
    return value as DriverName;
  }
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `${where} must be one of ${DRIVER_NAMES.map((n) => `"${n}"`).join(", ")}; got ${JSON.stringify(value)}`,
    { details: { choices: [...DRIVER_NAMES], got: String(value) } },
  );
}

function assertUsable(name: DriverName): void {
  if (name === "better-sqlite3") {
    loadBetterSqlite3();
    return;
  }
  const support = nodeSqliteSupport();
  if (!support.ok) {
    throw new StateError("E_UNSUPPORTED", `the node driver cannot be used: ${support.reason}`, {
      details: { driver: "node", node: process.versions.node },
    });
  }
}

/**
 * The engine for a connection: `requested` (an option), else `$AGENTSTATE_SQLITE_DRIVER`, else
 * node:sqlite where it passes the probe and better-sqlite3 elsewhere. A forced engine that cannot
 * run here is `E_UNSUPPORTED`; a name outside `DRIVER_NAMES` is `E_INVALID_ARGUMENT`.
 */
export function chooseDriver(requested?: unknown): DriverName {
  const forced =
    parseDriverName(requested, "driver") ??
    parseDriverName(process.env[DRIVER_ENV], `$${DRIVER_ENV}`);
  if (forced) {
    assertUsable(forced);
    return forced;
  }
  return nodeSqliteSupport().ok ? "node" : "better-sqlite3";
}

export function driverFactory(name: DriverName): DriverFactory {
  return FACTORIES[name];
}

/** Whether an engine can take `inertModules` (see DriverOpenOptions). */
export function supportsInertModules(name: DriverName): boolean {
  return name === "better-sqlite3";
}
