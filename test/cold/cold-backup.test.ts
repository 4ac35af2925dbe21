import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/create-backup.js";
import { restoreBackup } from "../../src/backup/restore-backup.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";

const tempDir = useTempDirs();

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
});
