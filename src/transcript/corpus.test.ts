// Checks the pure transcript logic against real legacy transcripts from the shared corpus (read
// here with fs, in the test only). Skipped when the corpus is not beside the project, except under
// CI, where it is always there and its absence must fail the run.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { extractInlineBlobs, restoreInlineBlobs } from "./blobs.js";
import { buildContext } from "./context.js";
import { hasParentKey, type TranscriptEvent } from "./event.js";
import { encodeJsonl, parseJsonl } from "./jsonl-codec.js";
import { searchableText } from "./search-text.js";
import { TranscriptTree } from "./tree.js";

const CORPUS = fileURLToPath(new URL("../../../shared/corpus/real/", import.meta.url));
const TRANSCRIPT_NAME = /\.jsonl(\.(deleted|reset)\..+)?$/;

function* transcriptFiles(dir: string, inSessions = false): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const parent = dir.split(/[\\/]/).at(-2);
      yield* transcriptFiles(path, entry.name === "sessions" && parent === "agents");
    } else if (inSessions && entry.isFile() && TRANSCRIPT_NAME.test(entry.name)) yield path;
  }
}

const files = existsSync(CORPUS)
  ? [...transcriptFiles(CORPUS)]
      .map((path) => ({ name: relative(CORPUS, path), text: readFileSync(path, "utf8") }))
      .filter((file) => file.text.length > 0)
  : [];

function eventsOf(text: string): TranscriptEvent[] {
  return parseJsonl(text).flatMap((result) => (result.ok ? [result.event] : []));
}

describe.skipIf(files.length === 0 && process.env.CI !== "true")("real corpus transcripts", () => {
  it("finds the transcripts, including deleted and reset archives", () => {
    expect(files.length).toBeGreaterThanOrEqual(40);
    expect(files.some((f) => f.name.includes(".jsonl.deleted."))).toBe(true);
    expect(files.some((f) => f.name.includes(".jsonl.reset."))).toBe(true);
  });

  it.each(files.map((f) => [f.name, f.text] as const))(
    "%s parses and re-encodes byte for byte",
    (_, text) => {
      const parsed = parseJsonl(text);
      expect(parsed.filter((r) => !r.ok)).toEqual([]);
      expect(parsed).toHaveLength(text.split("\n").length - 1);
      expect(encodeJsonl(eventsOf(text))).toBe(text);
    },
  );

  it("keeps absent and null parentIds apart", () => {
    const events = files.flatMap((f) => eventsOf(f.text)).filter((e) => e.type !== "session");
    expect(events.some((e) => !hasParentKey(e))).toBe(true);
    expect(events.some((e) => hasParentKey(e) && e.parentId === null)).toBe(true);
  });

  it("builds a tree, a context and search text for every file", () => {
    let branched = 0;
    for (const { text } of files) {
      const events = eventsOf(text);
      const tree = TranscriptTree.from(events);
      if (tree.branchPoints().length > 0) branched++;
      const leaf = tree.leafId;
      if (leaf !== undefined) expect(tree.pathTo(leaf).at(-1)).toBe(leaf);
      const context = buildContext(events);
      expect(context.length).toBeLessThanOrEqual(tree.size);
      for (const event of events) expect(typeof searchableText(event)).toBe("string");
    }
    expect(branched).toBeGreaterThan(0);
  });

  it("restores extracted images exactly", () => {
    let extracted = 0;
    for (const { text } of files) {
      for (const event of eventsOf(text)) {
        const { event: stored, blobs } = extractInlineBlobs(event, 1024);
        extracted += blobs.length;
        const lookup = (hex: string) => blobs.find((b) => b.sha256 === hex)?.data;
        expect(JSON.stringify(restoreInlineBlobs(stored, lookup))).toBe(JSON.stringify(event));
      }
    }
    expect(extracted).toBeGreaterThan(0);
  });
});
