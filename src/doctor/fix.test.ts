import { appendFileSync, cpSync, existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { restoreBackup } from "../backup/restore-backup.js";
import { verifyBackup } from "../backup/verify-backup.js";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";
import { planMigration } from "./plan.js";

const tempDir = useTempDirs();
const EXAMPLE = fileURLToPath(new URL("../../examples/legacy-home/", import.meta.url));
const noBackup = async () => "(test: no backup)";
const MAIN = "5d1c0a3e-8f2b-4c71-9a0e-2b7d6f4e1a90";
const GROUP = "a4e2b9d0-1c3f-4e8a-b6d7-90f1e2c3a4b5";
const DELETED = "c7f0e1d2-3b4a-4c5d-8e9f-0a1b2c3d4e5f";

function exampleHome(): string {
  const home = join(tempDir(), "home");
  cpSync(EXAMPLE, home, { recursive: true });
  return home;
}

describe("doctor plan", () => {
  it("lists every source with its target, records and hash, and changes nothing", () => {
    const home = exampleHome();
    const before = readFileSync(join(home, "agents/main/sessions/sessions.json"));
    const plan = planMigration(home);
    const byPath = new Map(plan.sources.map((s) => [s.path, s]));
    expect(byPath.get("agents/main/sessions/sessions.json")).toMatchObject({
      kind: "session-index",
      action: "import",
      records: 2,
      targetTable: "agent.session_entries",
    });
    expect(byPath.get(`agents/main/sessions/${MAIN}.jsonl`)).toMatchObject({
      kind: "transcript",
      records: 17,
      action: "import",
    });
    expect(byPath.get("agents/main/agent/auth-profiles.json")).toMatchObject({
      kind: "credentials",
      action: "leave",
      sha256: null,
    });
    expect(byPath.get("openclaw.json")).toMatchObject({ kind: "config", action: "leave" });
    expect(byPath.get(`agents/main/sessions/${MAIN}.jsonl`)?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(existsSync(join(home, "state"))).toBe(false);
    expect(readFileSync(join(home, "agents/main/sessions/sessions.json")).equals(before)).toBe(
      true,
    );
  });
});

describe("doctor --fix on the sample home", () => {
  it("imports sessions and transcripts, removes imported sources and leaves config and credentials", async () => {
    const home = exampleHome();
    const credentials = readFileSync(join(home, "agents/main/agent/auth-profiles.json"));
    const report = await runDoctorFix({ home, backup: noBackup });
    expect(report.status).toBe("succeeded");
    const state = openStateHome({ home, create: false });
    const main = state.agent("main", { create: false });
    expect(main.sessions.get("agent:main:main")?.entry).toMatchObject({
      sessionId: MAIN,
      chatType: "direct",
    });
    expect(main.sessions.get("agent:main:main")?.entry).not.toHaveProperty("sessionFile");
    expect(main.lifecycle.active("agent:main:main")?.sessionId).toBe(MAIN);
    expect(main.transcripts.read(MAIN)).toHaveLength(17);
    expect(main.lifecycle.get(DELETED).endedAt).toBe(Date.parse("2026-03-01T09:30:00.000Z"));
    expect(main.lifecycle.get(GROUP).sessionKey).toBe("agent:main:telegram:group:-5027021161");
    expect(state.transcripts.search("basil", { agentId: "main" }).length).toBeGreaterThan(0);
    expect(existsSync(join(home, `agents/main/sessions/${MAIN}.jsonl`))).toBe(false);
    expect(existsSync(join(home, `agents/main/sessions/${GROUP}.jsonl.lock`))).toBe(false);
    expect(
      readFileSync(join(home, "agents/main/agent/auth-profiles.json")).equals(credentials),
    ).toBe(true);
    expect(existsSync(join(home, "openclaw.json"))).toBe(true);
    const sources = state.db.prepare("SELECT status, removed_source FROM migration_sources").all();
    expect(sources.length).toBeGreaterThan(0);
    expect(sources.every((s) => (s as { status: string }).status === "imported")).toBe(true);
    state.close();

    const again = await runDoctorFix({ home, backup: noBackup });
    expect(again.status).toBe("nothing-to-do");
    expect(again.totals.records).toBe(0);
  });

  it("keeps a source that changed while it was imported, and a rerun finishes it", async () => {
    const home = exampleHome();
    const path = `agents/main/sessions/${MAIN}.jsonl`;
    // A writer still running against the legacy home touches the file once its import begins:
    // the same records, but no longer the bytes the plan hashed.
    const report = await runDoctorFix({
      home,
      backup: noBackup,
      onProgress: ({ source }) => {
        if (source.path === path) appendFileSync(join(home, path), "\n");
      },
    });
    const changed = report.sources.find((s) => s.path === path);
    expect(changed).toMatchObject({ status: "warning", removed: false, records: 17 });
    expect(changed?.error).toMatch(/changed while it was imported/);
    expect(report.status).toBe("partial");
    expect(existsSync(join(home, path))).toBe(true);

    const again = await runDoctorFix({ home, backup: noBackup });
    expect(again.sources.find((s) => s.path === path)).toMatchObject({
      status: "imported",
      removed: true,
      records: 17,
      alreadyPresent: 17,
    });
    expect(existsSync(join(home, path))).toBe(false);
    const state = openStateHome({ home });
    expect(state.agent("main").transcripts.read(MAIN)).toHaveLength(17);
    state.close();
  });

  it("with --keep-sources, a second run skips every source and changes no row", async () => {
    const home = exampleHome();
    const first = await runDoctorFix({ home, backup: noBackup, keepSources: true });
    expect(first.status).toBe("succeeded");
    const mtime = statSync(join(home, `agents/main/sessions/${MAIN}.jsonl`)).mtimeMs;
    const second = await runDoctorFix({ home, backup: noBackup, keepSources: true });
    expect(second.status).toBe("nothing-to-do");
    expect(second.sources.filter((s) => s.status === "skipped").length).toBe(first.totals.imported);
    expect(statSync(join(home, `agents/main/sessions/${MAIN}.jsonl`)).mtimeMs).toBe(mtime);
  });

  it("by default takes a verified backup first; restoring it brings back the legacy files", async () => {
    const home = exampleHome();
    const transcript = `agents/main/sessions/${MAIN}.jsonl`;
    const original = readFileSync(join(home, transcript));
    const report = await runDoctorFix({ home });
    expect(report.status).toBe("succeeded");
    expect(report.backupPath).toMatch(/backups\/.+\.tar\.gz$/);
    expect(existsSync(join(home, transcript))).toBe(false);
    expect((await verifyBackup(report.backupPath as string)).ok).toBe(true);

    const restored = join(tempDir(), "restored");
    await restoreBackup(report.backupPath as string, { home: restored });
    expect(readFileSync(join(restored, transcript)).equals(original)).toBe(true);
    const state = openStateHome({ home: restored, create: false });
    // The archive was taken before the first row was written: the restored home is pre-migration.
    expect(state.listAgents()).toEqual([]);
    expect(state.migrations.listRuns(10)).toEqual([]);
    state.close();
  });
});
