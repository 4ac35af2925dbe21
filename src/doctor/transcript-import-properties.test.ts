import { createHash } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { runDoctorFix } from "./fix.js";
import { planImport, planMigration } from "./plan.js";
import { headerLine } from "./test-support/legacy-lines.js";

const tempDir = useTempDirs();
const SESSION = "0b5e7c1a-2d3f-4a5b-8c9d-0e1f2a3b4c5d";
const PATH = `agents/main/sessions/${SESSION}.jsonl`;
/** A few ids, so that repeated ids (identical or not) are common. */
const IDS = ["e0000001", "e0000002", "e0000003", "e0000004", "e0000005", "e0000006"];

/** One physical line of a legacy transcript, as the generator means it. */
type Line =
  | { kind: "event"; id: string; variant: number; text: string; parent: number }
  | { kind: "blank"; text: string }
  | { kind: "broken"; text: string }
  | { kind: "header" }
  | { kind: "badUtf8" };

const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.constantFrom('quote " and \\ backslash', "line\nbreak\ttab", "\u2028\u2029", "ünï çødé 🦀"),
);

const line: fc.Arbitrary<Line> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("event" as const),
      id: fc.constantFrom(...IDS),
      variant: fc.nat(1),
      text,
      parent: fc.nat(8),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("blank" as const),
      text: fc.constantFrom("", " ", "\t", "  \t "),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("broken" as const),
      text: fc.constantFrom(
        "{not json",
        '{"type":"message","id":"e9",',
        "[1,2,3]",
        "42",
        '"a string"',
        "null",
        '{"type":"message","parentId":null}',
        '{"id":"e0000009","parentId":null}',
        '{"type":"message","id":"e0000009","parentId":7}',
        '{"type":"","id":"e0000009"}',
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "header" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "badUtf8" as const }) },
);

interface FileSpec {
  /** Whether the file starts with its session header (old or damaged files may not). */
  header: boolean;
  lines: Line[];
  bom: boolean;
  crlf: boolean;
  finalNewline: boolean;
}

const file: fc.Arbitrary<FileSpec> = fc.record({
  header: fc.boolean(),
  lines: fc.array(line, { maxLength: 30 }),
  bom: fc.boolean(),
  crlf: fc.boolean(),
  finalNewline: fc.boolean(),
});

const HEADER = headerLine(SESSION);

/**
 * A message record whose parent is an earlier id, null (a root), absent (as injected replies
 * are), or an id that is nowhere in the file (as after manual trimming).
 */
function eventText(l: Extract<Line, { kind: "event" }>, ids: string[]): string {
  const pick = l.parent % (ids.length + 3);
  const parent =
    pick < ids.length
      ? { parentId: ids[pick] }
      : pick === ids.length
        ? { parentId: null }
        : pick === ids.length + 1
          ? {}
          : { parentId: "deadbeef" };
  return JSON.stringify({
    type: "message",
    id: l.id,
    ...parent,
    timestamp: `2026-03-01T00:00:0${l.variant}.000Z`,
    message: {
      role: l.variant === 0 ? "user" : "assistant",
      content: [{ type: "text", text: l.text }],
    },
  });
}

/** A line with a byte that is not UTF-8; the rest of it would be a good record. */
const BAD_UTF8 = Buffer.concat([
  Buffer.from('{"type":"message","id":"e0000008","parentId":null,"text":"'),
  Buffer.from([0xc3, 0x28]),
  Buffer.from('"}'),
]);

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

interface Expected {
  body: Buffer;
  /** Every record that must be stored, in file order, as its compact JSON text. */
  stored: string[];
  /** Line numbers (1-based) that must be reported as problems. */
  problems: number[];
  /** Non-blank lines: what the plan of `--fix` counts. */
  lines: number;
  /** Of the problems, the lines refused only when written (a different record under a taken id). */
  conflicts: number[];
}

/**
 * The file and what a faithful import must make of it: each well-formed record once (a repeat
 * of an identical record merges, a different record under a taken id is a problem), a session
 * header only as the first JSON value of the file, and every broken line reported by number.
 */
function model(spec: FileSpec): Expected {
  const lines: (string | Buffer)[] = [];
  const stored: string[] = [];
  const problems: number[] = [];
  const conflicts: number[] = [];
  const byId = new Map<string, string>();
  const ids: string[] = [];
  let parsedBefore = false;
  const take = (l: Line | { kind: "header" }) => {
    const number = lines.length + 1;
    if (l.kind === "blank") lines.push(l.text);
    else if (l.kind === "badUtf8") {
      lines.push(BAD_UTF8);
      problems.push(number);
    } else if (l.kind === "broken") {
      lines.push(l.text);
      problems.push(number);
      parsedBefore ||= parses(l.text);
    } else if (l.kind === "header") {
      lines.push(HEADER);
      if (parsedBefore) problems.push(number);
      else stored.push(HEADER);
      parsedBefore = true;
    } else {
      const json = eventText(l, ids);
      lines.push(json);
      parsedBefore = true;
      const taken = byId.get(l.id);
      if (taken === undefined) {
        byId.set(l.id, json);
        ids.push(l.id);
        stored.push(json);
      } else if (taken !== json) {
        problems.push(number);
        conflicts.push(number);
      }
    }
  };
  if (spec.header) take({ kind: "header" });
  for (const l of spec.lines) take(l);
  const newline = spec.crlf ? "\r\n" : "\n";
  const pieces: Buffer[] = spec.bom ? [Buffer.from("\uFEFF")] : [];
  for (const [i, l] of lines.entries()) {
    pieces.push(Buffer.isBuffer(l) ? l : Buffer.from(l));
    if (i < lines.length - 1 || spec.finalNewline) pieces.push(Buffer.from(newline));
  }
  const nonBlank = lines.filter((l) => Buffer.isBuffer(l) || l.trim() !== "").length;
  return { body: Buffer.concat(pieces), stored, problems, lines: nonBlank, conflicts };
}

describe("doctor --fix on generated transcripts with every oddity of the format", () => {
  it("stores each well-formed record once, byte for byte, reports every other line by number, and a rerun adds nothing", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(file, async (spec) => {
        const expected = model(spec);
        const home = join(tempDir(), `home-${run++}`);
        mkdirSync(join(home, "agents/main/sessions"), { recursive: true });
        writeFileSync(join(home, PATH), expected.body);

        // The plan shown to the operator parses every line; the plan --fix runs counts them.
        const shown = planMigration(home).sources.find((s) => s.path === PATH);
        const counted = planImport(home).sources.find((s) => s.path === PATH);
        expect(counted?.records).toBe(expected.lines);
        expect(counted?.sha256).toBe(createHash("sha256").update(expected.body).digest("hex"));
        expect(counted?.sha256).toBe(shown?.sha256);
        const { lines, problems, conflicts } = expected;
        expect(shown?.records).toBe(lines - problems.length + conflicts.length);
        expect(shown?.problems.map((p) => p.line)).toEqual(
          problems.filter((line) => !conflicts.includes(line)),
        );

        const report = await runDoctorFix({ home, backup: async () => "(test: no backup)" });
        const source = report.sources.find((s) => s.path === PATH);
        expect(source?.problems.map((p) => p.line)).toEqual(expected.problems);
        expect(source?.status).toBe(expected.problems.length === 0 ? "imported" : "warning");
        // Only a complete import may remove the file.
        expect(existsSync(join(home, PATH))).toBe(expected.problems.length > 0);

        const check = () => {
          const state = openStateHome({ home, create: false });
          try {
            const scope = { agentId: "main", sessionId: SESSION };
            const exported = [...state.transcripts.exportJsonl(scope)].join("");
            expect(exported).toBe(expected.stored.map((json) => `${json}\n`).join(""));
            const seqs = state.transcripts.read(scope).map((e) => e.seq);
            expect(seqs).toEqual(expected.stored.map((_, i) => i + 1));
          } finally {
            state.close();
          }
        };
        check();
        if (expected.problems.length === 0) return;
        // The kept file, imported again, adds nothing and reports the same lines.
        const again = await runDoctorFix({ home, backup: async () => "(test: no backup)" });
        const rerun = again.sources.find((s) => s.path === PATH);
        expect(rerun?.problems.map((p) => p.line)).toEqual(expected.problems);
        expect(rerun?.alreadyPresent).toBe(rerun?.records);
        check();
      }),
      { numRuns: 60 },
    );
  });
});
