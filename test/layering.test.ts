import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// Folders are layers (docs: README "Layout"): db → stores → home.ts → doctor, backup, worker, … →
// cli, server. This test reads the import statements of every source file under src/ and holds the
// folders to that order, so a cycle cannot come back unnoticed.

const SRC = fileURLToPath(new URL("../src", import.meta.url));

/**
 * Import arrows that may still close a cycle, each with the reason. Keep this list short and
 * remove an entry as soon as its reason is gone.
 */
const EXEMPT: readonly { from: string; to: string; why: string }[] = [];

/** Pure logic and the database layer: they import nothing from the layers above them. */
const BOTTOM = new Set([
  "db",
  "transcript",
  "memory",
  "vfs",
  "tar",
  "schedule",
  "ids.ts",
  "lazy-require.ts",
]);

// Tests and their fixtures may build what they need from any layer; only the product code is held.
function isProductSource(path: string): boolean {
  return (
    path.endsWith(".ts") && !path.endsWith(".test.ts") && !path.split("/").includes("test-support")
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return isProductSource(relative(SRC, path)) ? [path] : [];
  });
}

/** "stores/agent/vfs-store.ts" → "stores"; "home.ts" → "home.ts". */
function folderOf(srcPath: string): string {
  return srcPath.split("/")[0] as string;
}

interface Arrow {
  from: string;
  to: string;
  /** One import that draws the arrow: `file -> imported file`. */
  example: string;
}

/** Every import between two different top-level folders (or root files) of src/, type-only ones included. */
function arrows(): Arrow[] {
  const found = new Map<string, Arrow>();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const target = relative(SRC, resolve(dirname(file), fileName)).replace(/\.js$/, ".ts");
      if (target.startsWith("..")) continue;
      const from = folderOf(relative(SRC, file));
      const to = folderOf(target);
      if (from !== to && !found.has(`${from} ${to}`)) {
        found.set(`${from} ${to}`, { from, to, example: `${relative(SRC, file)} -> ${target}` });
      }
    }
  }
  return [...found.values()];
}

/** The strongly connected components with more than one folder (Tarjan). */
function cycles(edges: readonly Arrow[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node) as number, low.get(to) as number));
      } else if (stack.includes(to)) {
        low.set(node, Math.min(low.get(node) as number, index.get(to) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      component.push(member);
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of next.keys()) if (!index.has(node)) visit(node);
  return found;
}

function isExempt(arrow: Arrow): boolean {
  return EXEMPT.some((e) => e.from === arrow.from && e.to === arrow.to);
}

describe("layering of src/", () => {
  const all = arrows();

  it("reads the imports it checks (a parser that found nothing would pass anything)", () => {
    expect(all).toContainEqual(expect.objectContaining({ from: "stores", to: "db" }));
    expect(all).toContainEqual(expect.objectContaining({ from: "cli", to: "home.ts" }));
    for (const e of EXEMPT) {
      expect(all, `exempt arrow ${e.from} -> ${e.to} no longer exists: remove it`).toContainEqual(
        expect.objectContaining({ from: e.from, to: e.to }),
      );
    }
  });

  it("has no cycle between top-level folders, apart from the listed exemptions", () => {
    const checked = all.filter((a) => !isExempt(a));
    const report = cycles(checked).map((members) =>
      checked
        .filter((a) => members.includes(a.from) && members.includes(a.to))
        .map((a) => `${a.from} -> ${a.to} (${a.example})`),
    );
    expect(report).toEqual([]);
  });

  it("keeps the pure logic and db folders free of imports from above", () => {
    const upward = all
      .filter((a) => BOTTOM.has(a.from) && !BOTTOM.has(a.to))
      .map((a) => `${a.from} -> ${a.to} (${a.example})`);
    expect(upward).toEqual([]);
  });

  it("keeps agent stores and global stores apart: shared checks live in stores/", () => {
    const crossing: string[] = [];
    for (const file of sourceFiles(join(SRC, "stores"))) {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
      const from = relative(join(SRC, "stores"), file).split("/")[0];
      for (const { fileName } of importedFiles) {
        const target = relative(join(SRC, "stores"), resolve(dirname(file), fileName));
        const to = target.split("/")[0];
        if ((from === "agent" && to === "global") || (from === "global" && to === "agent")) {
          crossing.push(`${relative(SRC, file)} -> ${fileName}`);
        }
      }
    }
    expect(crossing).toEqual([]);
  });
});
