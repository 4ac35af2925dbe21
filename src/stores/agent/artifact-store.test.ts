import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { MAX_ARTIFACT_BYTES, RunArtifactStore, ToolArtifactStore } from "./artifact-store.js";

const tempDir = useTempDirs();

function open(): { db: Database; tool: ToolArtifactStore; run: RunArtifactStore } {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  return { db, tool: new ToolArtifactStore(db), run: new RunArtifactStore(db) };
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isStateError(error) ? error.code : (error as Error).name;
  }
  return undefined;
}

describe("ToolArtifactStore", () => {
  it("puts, gets, lists by run and deletes a run's artifacts", () => {
    const { db, tool } = open();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 255]);
    const put = tool.put("run-1", "shot-2", { kind: "image/png", data: png, metadata: { w: 2 } });
    expect(put).toMatchObject({ runId: "run-1", name: "shot-2", size: 6, metadata: { w: 2 } });
    tool.put("run-1", "shot-1", { kind: "text", data: "héllo" });
    tool.put("run-1", "manifest", { kind: "manifest", metadata: { files: ["a"] } });
    tool.put("run-2", "other", { kind: "text", data: "x" });
    expect(tool.get("run-1", "shot-2")?.data?.equals(png)).toBe(true);
    expect(tool.get("run-1", "shot-1")?.data?.toString("utf8")).toBe("héllo");
    expect(tool.get("run-1", "manifest")).toMatchObject({ data: null, size: 0 });
    expect(tool.get("run-1", "missing")).toBeUndefined();
    const listed = tool.list("run-1");
    expect(listed.map((a) => [a.name, a.kind, a.size])).toEqual([
      ["manifest", "manifest", 0],
      ["shot-1", "text", 6],
      ["shot-2", "image/png", 6],
    ]);
    expect(listed[0]).not.toHaveProperty("data");
    tool.put("run-1", "shot-1", { kind: "text", data: "replaced" });
    expect(tool.get("run-1", "shot-1")?.data?.toString()).toBe("replaced");
    expect(tool.delete("run-1", "shot-1")).toBe(true);
    expect(tool.delete("run-1", "shot-1")).toBe(false);
    expect(tool.deleteRun("run-1")).toBe(2);
    expect(tool.list("run-1")).toEqual([]);
    expect(tool.list("run-2")).toHaveLength(1);
    db.close();
  });

  it("uses the primary key for list-by-run and delete-by-run", () => {
    const { db } = open();
    const plan = (sql: string) =>
      db
        .prepare<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
        .all()
        .map((r) => r.detail)
        .join(" ");
    expect(plan("SELECT * FROM tool_artifacts WHERE run_id = 'r' ORDER BY artifact_id")).toMatch(
      /USING INDEX sqlite_autoindex_tool_artifacts_1 \(run_id=\?\)/,
    );
    expect(plan("DELETE FROM run_artifacts WHERE run_id = 'r'")).toMatch(/run_id=\?/);
    db.close();
  });

  it("validates ids, kinds, metadata and size", () => {
    const { db, tool } = open();
    expect(codeOf(() => tool.put("", "a", { kind: "text" }))).toBe("E_INVALID_ID");
    expect(codeOf(() => tool.put("r", "a\nb", { kind: "text" }))).toBe("E_INVALID_ID");
    expect(codeOf(() => tool.put("r", "a", { kind: "" }))).toBe("E_INVALID_ARGUMENT");
    expect(codeOf(() => tool.put("r", "a", { kind: "t", metadata: [] as never }))).toBe(
      "E_INVALID_ARGUMENT",
    );
    const big = Buffer.alloc(MAX_ARTIFACT_BYTES + 1);
    expect(codeOf(() => tool.put("r", "a", { kind: "bin", data: big }))).toBe("E_TOO_LARGE");
    db.close();
  });
});

describe("RunArtifactStore", () => {
  it("keys artifacts by canonical path, lists below a directory, refuses bad paths", () => {
    const { db, run } = open();
    run.put("r1", "reports/summary.md", { kind: "text/markdown", data: "# ok" });
    run.put("r1", "/reports//deep/./trace.json", { kind: "trajectory", data: "{}" });
    run.put("r1", "/log.txt", { kind: "log", data: "l" });
    run.put("r2", "/reports/other.md", { kind: "text", data: "o" });
    expect(run.get("r1", "/reports/deep/trace.json")?.data?.toString()).toBe("{}");
    expect(run.list("r1").map((a) => a.name)).toEqual([
      "/log.txt",
      "/reports/deep/trace.json",
      "/reports/summary.md",
    ]);
    expect(run.list("r1", { under: "reports" }).map((a) => a.name)).toEqual([
      "/reports/deep/trace.json",
      "/reports/summary.md",
    ]);
    expect(codeOf(() => run.put("r1", "../escape", { kind: "x" }))).toBe("E_PATH");
    expect(codeOf(() => run.put("r1", "/", { kind: "x" }))).toBe("E_PATH");
    expect(codeOf(() => run.put("r1", "a\0b", { kind: "x" }))).toBe("E_PATH");
    expect(run.delete("r1", "reports/summary.md")).toBe(true);
    expect(run.deleteRun("r1")).toBe(2);
    expect(run.list("r2")).toHaveLength(1);
    db.close();
  });
});
