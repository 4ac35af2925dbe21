import { createHash, randomBytes } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import {
  makeHome,
  readEntries,
  replaceBody,
  rewrite,
} from "../../src/backup/test-support/archives.js";
import { openControlPlane } from "../../src/control-plane/open-control-plane.js";
import { withClient } from "../../src/control-plane/test-support/control-planes.js";
import { usePostgres } from "../../src/test-support/postgres.js";
import { modeOf, useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { type CliResult, cli } from "../support/cli.js";

const clusterUrl = usePostgres();
const tempDir = useTempDirs();
const PASSWORD = `pw-${randomBytes(12).toString("hex")}`;
const DUMP = "control-plane/postgres.sql";
beforeAll(requireBuild);

/** The cluster's URL for `database`, with the password this file's cluster demands. */
function urlOf(database: string): string {
  const url = new URL(clusterUrl());
  url.password = PASSWORD;
  url.pathname = `/${database}`;
  return url.toString();
}

// Password authentication for this file's cluster: a pg_dump or psql that did not get the
// password would fail, so every passing run proves the password reached the tools.
beforeAll(async () => {
  await withClient(clusterUrl(), async (client) => {
    await client.query(`ALTER USER postgres PASSWORD '${PASSWORD}'`);
    const { rows } = await client.query("SHOW hba_file");
    writeFileSync(rows[0].hba_file as string, "host all all 127.0.0.1/32 scram-sha-256\n");
    await client.query("SELECT pg_reload_conf()");
  });
});

let databases = 0;
async function freshDatabase(): Promise<string> {
  const name = `cpbackup_${process.pid}_${++databases}`;
  await withClient(urlOf("postgres"), (c) => c.query(`CREATE DATABASE ${name}`));
  return urlOf(name);
}

/** Leases (held, released, with a lag report) and queue entries (pending, claimed, settled). */
async function seed(url: string): Promise<void> {
  const cp = await openControlPlane({ url });
  try {
    await cp.leases.acquire("x", "host-a", 600_000);
    await cp.leases.acquire("y", "host-b", 600_000);
    const z = await cp.leases.acquire("z", "host-b", 600_000);
    await cp.leases.release("z", "host-b", z.epoch);
    await cp.leases.report("host-a", [{ agentId: "x", epoch: 1, lagMs: 1_250 }]);
    for (const id of ["m1", "m2", "m3"]) {
      await cp.queue.enqueue("outbound", { id, payload: { text: `hello ${id}` } });
    }
    await cp.queue.enqueue("inbound", { id: "i1", payload: { n: 1 }, idempotencyKey: "k1" });
    await cp.queue.claim("outbound", "worker-1");
  } finally {
    await cp.close();
  }
}

/** Every table and sequence of the database, row by row, read with plain SQL. */
/**
 * The tables and identity columns the PostgreSQL schema files create, read from the files (not
 * through the code under test), with the migration ledger the migrator adds.
 */
const SCHEMA = (() => {
  const dir = new URL("../../src/db/schema/postgres/", import.meta.url);
  const sql = readdirSync(dir)
    .filter((name) => name.endsWith(".sql"))
    .map((name) => readFileSync(new URL(name, dir), "utf8"))
    .join("\n");
  const tables = [...sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/gi)].map((m) => m[1]);
  return {
    tables: [...tables, "agentstate_schema_migrations"].sort(),
    identities: sql.match(/GENERATED ALWAYS AS IDENTITY/gi)?.length ?? 0,
  };
})();

async function contents(url: string): Promise<Record<string, unknown[]>> {
  return withClient(url, async (client) => {
    const tables = await client.query(
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    );
    const out: Record<string, unknown[]> = {};
    for (const { tablename } of tables.rows as { tablename: string }[]) {
      const { rows } = await client.query(`SELECT * FROM public.${tablename}`);
      out[tablename] = rows.map((row) => JSON.stringify(row)).sort();
    }
    const sequences = await client.query(
      "SELECT sequencename, last_value FROM pg_sequences ORDER BY sequencename",
    );
    out["(sequences)"] = sequences.rows;
    return out;
  });
}

function expectNoPassword(...texts: (string | Buffer)[]): void {
  for (const text of texts) expect(Buffer.from(text).includes(PASSWORD)).toBe(false);
}

function expectOk(result: CliResult): void {
  expect(result.status, result.stderr).toBe(0);
  expectNoPassword(result.stdout, result.stderr);
}

function createWith(home: string, url: string, ...args: string[]): string {
  const result = cli(["backup", "create", "--home", home, "--json", ...args], {
    AGENTSTATE_CONTROL_PLANE: url,
  });
  expectOk(result);
  return (JSON.parse(result.stdout) as { archive: string }).archive;
}

describe("agentstate backup with a PostgreSQL control plane", () => {
  it("dumps it into the archive and loads it into an empty database row for row", async () => {
    const source = await freshDatabase();
    await seed(source);
    const home = makeHome(tempDir());
    const archive = createWith(home, source);

    const raw = readFileSync(archive);
    const entries = readEntries(archive);
    const dump = entries.find((entry) => entry.path === DUMP)?.body as Buffer;
    expect(dump.toString()).toMatch(/CREATE TABLE public\.agent_leases/);
    const manifest = JSON.parse(
      entries.find((entry) => entry.path === "manifest.json")?.body.toString() as string,
    );
    const version = await withClient(source, (c) => c.query("SHOW server_version"));
    expect(manifest.controlPlane).toEqual({
      backend: "postgres",
      server: `postgres@127.0.0.1:${new URL(source).port}${new URL(source).pathname}`,
      serverVersion: version.rows[0].server_version,
      pgDumpVersion: expect.stringMatching(/^\d+\.\d+/),
      homePath: "control-plane.sql",
      archivePath: DUMP,
      bytes: dump.length,
      sha256: createHash("sha256").update(dump).digest("hex"),
    });
    // Neither the archive (compressed or not), its manifest nor the home's run record holds it.
    expectNoPassword(raw, gunzipSync(raw));
    for (const name of readdirSync(join(home, "state"))) {
      expectNoPassword(readFileSync(join(home, "state", name)));
    }

    const verified = cli(["backup", "verify", archive, "--json"]);
    expectOk(verified);
    const kinds = JSON.parse(verified.stdout).entries.map((e: { path: string; kind: string }) => [
      e.path,
      e.kind,
    ]);
    expect(kinds).toContainEqual([DUMP, "control-plane"]);

    const target = await freshDatabase();
    const restored = join(tempDir(), "restored");
    const result = cli([
      "backup",
      "restore",
      archive,
      "--home",
      restored,
      "--control-plane",
      target,
    ]);
    expectOk(result);
    expect(result.stdout).toMatch(
      /control plane: loaded into postgres@127\.0\.0\.1:\d+\/cpbackup_/,
    );
    const written = join(restored, "control-plane.sql");
    expect(readFileSync(written).equals(dump)).toBe(true);
    expect(modeOf(lstatSync(written))).toBe(0o600);

    const [want, got] = [await contents(source), await contents(target)];
    expect(Object.keys(want)).toEqual([...SCHEMA.tables, "(sequences)"]);
    expect(want["(sequences)"]).toHaveLength(SCHEMA.identities);
    expect(want.delivery_queue_entries).toHaveLength(4);
    expect(got).toEqual(want);
    // The loaded database is a control plane agentstate opens as its own (same migration ledger).
    const cp = await openControlPlane({ url: target });
    await cp.close();
  });

  it("without --control-plane, restore writes the dump and says how to load it; a used database is refused", async () => {
    const source = await freshDatabase();
    await seed(source);
    const archive = createWith(makeHome(tempDir()), source);

    const home = join(tempDir(), "restored");
    const plain = cli(["backup", "restore", archive, "--home", home]);
    expectOk(plain);
    expect(plain.stdout).toContain(
      `${join(home, "control-plane.sql")}; load it into a new, empty database`,
    );
    expect(plain.stdout).toContain("psql -v ON_ERROR_STOP=1 --single-transaction");
    expect(modeOf(lstatSync(join(home, "control-plane.sql")))).toBe(0o600);

    for (const force of [[], ["--force"]]) {
      const other = join(tempDir(), "refused");
      const refused = cli([
        "backup",
        "restore",
        archive,
        "--home",
        other,
        "--control-plane",
        source,
        ...force,
      ]);
      expect(refused.status, refused.stderr).toBe(5);
      expect(refused.stderr).toMatch(/already holds an agentstate control plane/);
      expectNoPassword(refused.stdout, refused.stderr);
      expect(existsSync(other)).toBe(false);
    }

    // Backed up again with a fresh dump, the restored home's old one is superseded, not carried twice.
    const again = createWith(home, source);
    const paths = readEntries(again).map((entry) => entry.path);
    expect(paths).toContain(DUMP);
    expect(paths).not.toContain("files/control-plane.sql");
  });

  it("a corrupted dump fails verify (exit 4, naming it) and restore", async () => {
    const source = await freshDatabase();
    await seed(source);
    const dir = tempDir();
    const archive = createWith(makeHome(dir), source, "--no-compress");
    const bad = rewrite(archive, join(dir, "bad.tar.gz"), (entries) =>
      replaceBody(entries, DUMP, (body) => {
        const at = body.indexOf("host-a");
        body[at] = "H".charCodeAt(0);
        return body;
      }),
    );
    const verified = cli(["backup", "verify", bad]);
    expect(verified.status).toBe(4);
    expect(verified.stderr).toContain(`entry "${DUMP}": SHA-256 mismatch`);
    const restored = cli(["backup", "restore", bad, "--home", join(dir, "restored")]);
    expect(restored.status).toBe(4);
    expect(existsSync(join(dir, "restored"))).toBe(false);
  });

  it("an unreachable server fails create: no archive, a failed run, the server named but not its password", () => {
    const home = makeHome(tempDir());
    const closed = urlOf("postgres").replace(`:${new URL(clusterUrl()).port}/`, ":1/");
    const result = cli(["backup", "create", "--home", home, "--control-plane", closed]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /pg_dump failed \(exit 1\) dumping the control plane at postgres@127\.0\.0\.1:1\/postgres/,
    );
    expectNoPassword(result.stdout, result.stderr);
    expect(readdirSync(join(home, "backups"))).toEqual([]);
    const listed = cli(["backup", "list", "--home", home, "--json"]);
    const runs = JSON.parse(listed.stdout) as { status: string }[];
    expect(runs.map((run) => run.status)).toEqual(["failed"]);
    for (const name of readdirSync(join(home, "state"))) {
      expectNoPassword(readFileSync(join(home, "state", name)));
    }
  });
});
