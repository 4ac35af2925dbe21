import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { openStateHome } from "../home.js";
import { usePostgres } from "../test-support/postgres.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import type { ControlPlane } from "./control-plane.js";
import { openControlPlane } from "./open-control-plane.js";
import { freshDatabase, withClient } from "./test-support/control-planes.js";

const clusterUrl = usePostgres();
const tempDir = useTempDirs();
const opened: ControlPlane[] = [];
afterEach(async () => {
  for (const cp of opened.splice(0)) await cp.close();
  delete process.env.AGENTSTATE_CONTROL_PLANE;
});

// Read from the files here, not through the code under test.
const SCHEMA_DIR = new URL("../db/schema/postgres/", import.meta.url);
const FILES = readdirSync(SCHEMA_DIR)
  .filter((f) => f.endsWith(".sql"))
  .sort();

async function ledger(url: string) {
  return withClient(url, async (c) => {
    const { rows } = await c.query(
      "SELECT version, name, sha256 FROM agentstate_schema_migrations ORDER BY version",
    );
    return rows;
  });
}

describe("PostgreSQL control plane: schema", () => {
  it("applies each numbered file once when several hosts open a fresh database at the same moment", async () => {
    const url = await freshDatabase(clusterUrl(), "pg");
    const hosts = await Promise.all(Array.from({ length: 6 }, () => openControlPlane({ url })));
    opened.push(...hosts);
    const expected = FILES.map((file, i) => ({
      version: i + 1,
      name: file.replace(/^\d{4}_/, "").replace(/\.sql$/, ""),
      sha256: createHash("sha256")
        .update(readFileSync(new URL(file, SCHEMA_DIR)))
        .digest("hex"),
    }));
    expect(await ledger(url)).toEqual(expected);
    opened.push(await openControlPlane({ url }));
    expect(await ledger(url)).toEqual(expected);
    expect(hosts.every((cp) => cp.backend === "postgres")).toBe(true);
  });

  it("refuses a database migrated from other files, or by a newer agentstate", async () => {
    const url = await freshDatabase(clusterUrl(), "pg");
    await (await openControlPlane({ url })).close();
    await withClient(url, (c) => c.query("UPDATE agentstate_schema_migrations SET sha256 = 'x'"));
    await expect(openControlPlane({ url })).rejects.toMatchObject({ code: "E_SCHEMA_MISMATCH" });
    await withClient(url, async (c) => {
      await c.query("DELETE FROM agentstate_schema_migrations");
      for (let v = 1; v <= FILES.length + 1; v++) {
        await c.query("INSERT INTO agentstate_schema_migrations VALUES ($1, 'n', 's', 0)", [v]);
      }
    });
    await expect(openControlPlane({ url })).rejects.toMatchObject({ code: "E_SCHEMA_TOO_NEW" });
  });
});

describe("PostgreSQL control plane: indexes", () => {
  it("has every index the global SQLite schema keeps on the delivery queue", async () => {
    const home = openStateHome({ home: tempDir() });
    const sqlite = home.db
      .prepare<{ name: string }>(
        "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'delivery_queue_entries' AND sql IS NOT NULL",
      )
      .all()
      .map((row) => row.name)
      .sort();
    home.close();
    const url = await freshDatabase(clusterUrl(), "pg");
    const cp = await openControlPlane({ url });
    opened.push(cp);
    const pg = await withClient(url, async (c) =>
      (
        await c.query("SELECT indexname FROM pg_indexes WHERE tablename = 'delivery_queue_entries'")
      ).rows.map((row: { indexname: string }) => row.indexname),
    );
    expect(sqlite.length).toBeGreaterThan(5);
    expect(pg).toEqual(expect.arrayContaining(sqlite));
  });
});

describe("openControlPlane", () => {
  it("goes to PostgreSQL when AGENTSTATE_CONTROL_PLANE holds a URL, even when given a home", async () => {
    const url = await freshDatabase(clusterUrl(), "pg");
    process.env.AGENTSTATE_CONTROL_PLANE = url;
    const cp = await openControlPlane({ home: tempDir() });
    opened.push(cp);
    expect(cp.backend).toBe("postgres");
    await cp.queue.enqueue("q", { id: "via-env", payload: 1 });
    const rows = await withClient(url, (c) => c.query("SELECT id FROM delivery_queue_entries"));
    expect(rows.rows).toEqual([{ id: "via-env" }]);
  });

  it("stays on the home's SQLite database without the variable", async () => {
    const cp = await openControlPlane({ home: tempDir() });
    opened.push(cp);
    expect(cp.backend).toBe("sqlite");
  });

  it("refuses a URL that is not PostgreSQL's, without echoing its password", async () => {
    process.env.AGENTSTATE_CONTROL_PLANE = "mysql://user:secret@db/x";
    const error = await openControlPlane({ home: tempDir() }).catch((e: unknown) => e);
    expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
    expect((error as Error).message).not.toContain("secret");
  });

  it("refuses text PostgreSQL cannot store (a NUL character) as E_INVALID_ARGUMENT", async () => {
    const cp = await openControlPlane({ url: await freshDatabase(clusterUrl(), "pg") });
    opened.push(cp);
    await expect(cp.tasks.create({ runtime: "cli", label: "a\u0000b" })).rejects.toMatchObject({
      code: "E_INVALID_ARGUMENT",
    });
    expect(await cp.tasks.listByStatus("queued")).toEqual([]);
  });

  it("reports an unreachable server as E_IO", async () => {
    const port = new URL(clusterUrl()).port;
    const closed = clusterUrl().replace(`:${port}/`, ":1/");
    await expect(openControlPlane({ url: closed })).rejects.toMatchObject({ code: "E_IO" });
  });
});

describe("PostgreSQL control plane: fencing under concurrency", () => {
  it("a fenced write waiting on a host winning the agent is refused once that host commits", async () => {
    const url = await freshDatabase(clusterUrl(), "pg");
    const cp = await openControlPlane({ url });
    opened.push(cp);
    const { epoch } = await cp.leases.acquire("main", "host-a", 60_000);
    await withClient(url, async (winner) => {
      // Another host is taking the agent over, its transaction not yet committed.
      await winner.query("BEGIN");
      await winner.query(
        "UPDATE agent_leases SET epoch = epoch + 1, owner_host = 'host-b' WHERE agent_id = 'main'",
      );
      const write = cp.queue
        .enqueue("q", { id: "late", payload: 1 }, { fence: { agentId: "main", epoch } })
        .then(
          () => "written",
          (e: unknown) => (isStateError(e) ? e.code : String(e)),
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
      await winner.query("COMMIT");
      expect(await write).toBe("E_LEASE_LOST");
      const { rows } = await winner.query("SELECT count(*)::int AS n FROM delivery_queue_entries");
      expect(rows[0].n).toBe(0);
    });
  });
});

describe("PostgreSQL control plane: bounded waits", () => {
  it("a statement held up past timeoutMs fails with E_IO, and the next one is answered", async () => {
    const url = await freshDatabase(clusterUrl(), "pg");
    const cp = await openControlPlane({ url, timeoutMs: 500 });
    opened.push(cp);
    await cp.leases.acquire("main", "host-a", 60_000);
    await withClient(url, async (blocker) => {
      // A session that took the row and went quiet, as a paused host would.
      await blocker.query("BEGIN");
      await blocker.query("SELECT * FROM agent_leases WHERE agent_id = 'main' FOR UPDATE");
      const startedAt = Date.now();
      const stuck = await cp.leases.renew("host-a", 60_000).then(
        () => "renewed",
        (e: unknown) => (isStateError(e) ? e.code : String(e)),
      );
      expect(stuck).toBe("E_IO");
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      await blocker.query("ROLLBACK");
    });
    const renewed = await cp.leases.renew("host-a", 60_000);
    expect(renewed.map((l) => l.agentId)).toEqual(["main"]);
  });
});
