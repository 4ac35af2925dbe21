import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/create-backup.js";
import { restoreBackup } from "../../src/backup/restore-backup.js";
import { verifyBackup } from "../../src/backup/verify-backup.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";

const tempDir = useTempDirs();

function appendMany(home: ReturnType<typeof openStateHome>, agentId: string, n: number): string {
  const agent = home.agent(agentId);
  for (let i = 0; i < n; i++) {
    agent.transcripts.append("s1", {
      type: "message",
      message: { role: "user", content: `walrus ${i}` },
    });
  }
  return [...agent.transcripts.exportJsonl("s1")].join("");
}

/** The cold archives of an agent (beside them in its cold directory: its cold index file). */
function coldFiles(home: string, agentId: string): string[] {
  const names = readdirSync(join(home, "agents", agentId, "agent", "cold"));
  return names.filter((name) => name.endsWith(".cold"));
}

describe("a backup of a home with cold sessions", () => {
  it("carries the archives: the restored home reads, searches and restores them", async () => {
    const source = tempDir();
    const home = openStateHome({ home: source });
    const agent = home.agent("main");
    for (let i = 0; i < 30; i++) {
      agent.transcripts.append("s1", {
        type: "message",
        message: { role: "user", content: `walrus ${i}` },
      });
    }
    const jsonl = [...agent.transcripts.exportJsonl("s1")].join("");
    agent.cold.move("s1");
    home.close();

    const { archive } = await createBackup(source, { out: join(tempDir(), "b.tar.gz") });
    const target = join(tempDir(), "restored");
    await restoreBackup(archive, { home: target });

    const restored = openStateHome({ home: target });
    const copy = restored.agent("main");
    expect(copy.cold.isCold("s1")).toBe(true);
    expect([...copy.transcripts.exportJsonl("s1")].join("")).toBe(jsonl);
    expect(copy.search.search("walrus", { limit: 100 })).toHaveLength(30);
    copy.transcripts.append("s1", { type: "message", message: { role: "user", content: "back" } });
    expect(copy.transcripts.read("s1")).toHaveLength(32);
    restored.close();
  });

  it("keeps the archive a snapshot names when a restore deletes it before the home is walked", async () => {
    const source = tempDir();
    const home = openStateHome({ home: source });
    const jsonl = appendMany(home, "main", 30);
    home.agent("main").cold.move("s1");
    appendMany(home, "zz", 3);
    let restoredDuringBackup = false;
    const { archive, manifest } = await createBackup(home, {
      out: join(tempDir(), "b.tar"),
      onProgress: (progress) => {
        // After main's snapshot, before the walk of the home: an append restores the session,
        // which deletes its archive once the restore commits.
        if (progress.phase === "snapshot" && progress.entry.includes("zz")) {
          home.agent("main").transcripts.append("s1", {
            type: "message",
            message: { role: "user", content: "after the snapshot" },
          });
          restoredDuringBackup = coldFiles(source, "main").length === 0;
        }
      },
    });
    home.close();
    expect(restoredDuringBackup).toBe(true);
    expect(manifest.files.filter((f) => f.homePath.includes("/cold/"))).toHaveLength(1);
    expect((await verifyBackup(archive)).ok).toBe(true);

    const target = join(tempDir(), "restored");
    await restoreBackup(archive, { home: target });
    const restored = openStateHome({ home: target });
    const copy = restored.agent("main");
    expect(copy.cold.isCold("s1")).toBe(true);
    expect([...copy.transcripts.exportJsonl("s1")].join("")).toBe(jsonl);
    restored.close();
  });

  it("leaves out a cold archive missing from the home, and verify names it", async () => {
    const source = tempDir();
    const home = openStateHome({ home: source });
    appendMany(home, "main", 5);
    home.agent("main").cold.move("s1");
    home.close();
    const [lost] = coldFiles(source, "main");
    rmSync(join(source, "agents", "main", "agent", "cold", lost as string));

    const { archive, manifest } = await createBackup(source, { out: join(tempDir(), "b.tar") });
    expect(manifest.skipped.map((s) => s.homePath)).toContain(`agents/main/agent/cold/${lost}`);
    const report = await verifyBackup(archive);
    expect(report.ok).toBe(false);
    expect(report.firstProblem).toContain(`agents/main/agent/cold/${lost}`);
  });
});
