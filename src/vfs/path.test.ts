import { posix, sep } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import {
  descendantRange,
  hostPathFor,
  isVfsDescendant,
  MAX_VFS_PATH_BYTES,
  normalizeVfsPath,
  parseVfsPath,
  vfsBaseName,
  vfsJoin,
  vfsParent,
  vfsRelative,
} from "./path.js";

const REFUSED = Symbol("refused");
const HOST_ROOT = "/srv/agentstate-projection";

/** Attack strings and what each must become: refused with E_PATH, or a safely rooted path. */
const PATH_ATTACKS: ReadonlyArray<readonly [string, string | typeof REFUSED]> = [
  ["../../etc/passwd", REFUSED],
  ["a/../../b", REFUSED],
  ["/..", REFUSED],
  ["..", REFUSED],
  ["a/b/../../..", REFUSED],
  ["\0", REFUSED],
  ["a\0b", REFUSED],
  ["notes.txt\0.png", REFUSED],
  ["%2e%2e/", "/%2e%2e"],
  ["%2e%2e/%2e%2e/etc/passwd", "/%2e%2e/%2e%2e/etc/passwd"],
  ["..%2f..%2fetc", "/..%2f..%2fetc"],
  ["\uff0e\uff0e/x", REFUSED],
  ["a\uff0fb", REFUSED],
  ["\u2025", REFUSED],
  ["x/\u2024", REFUSED],
  ["..\\..\\windows", REFUSED],
  ["a\\b", REFUSED],
  ["\\\\server\\share", REFUSED],
  ["//", "/"],
  ["//etc//passwd", "/etc/passwd"],
  ["/etc/passwd", "/etc/passwd"],
  ["a".repeat(256), REFUSED],
  [`${"a".repeat(200)}/`.repeat(25), REFUSED],
  ["é".repeat(128), REFUSED],
  ["", REFUSED],
  ["a\nb", REFUSED],
  ["a\rb", REFUSED],
  ["\u001b[31mred", REFUSED],
  ["\u0085", REFUSED],
  ["evil\u202etxt.exe", REFUSED],
  ["\ud800", REFUSED],
  ["./././.", "/"],
  ["a/./b/", "/a/b"],
  ["~/.ssh/id_rsa", "/~/.ssh/id_rsa"],
  ["C:/Windows", "/C:/Windows"],
  ["...", "/..."],
  ["a/b/..", "/a"],
  ["e\u0301", "/\u00e9"],
  ["file:///etc/passwd", "/file:/etc/passwd"],
  ["\u00a0", "/\u00a0"],
];

function attempt(input: string): string | typeof REFUSED {
  try {
    return normalizeVfsPath(input);
  } catch (error) {
    if (isStateError(error, "E_PATH")) return REFUSED;
    throw error;
  }
}

describe("parseVfsPath: attacks", () => {
  it(`has at least 30 attack strings (${PATH_ATTACKS.length})`, () => {
    expect(PATH_ATTACKS.length).toBeGreaterThanOrEqual(30);
  });

  for (const [input, expected] of PATH_ATTACKS) {
    it(`${JSON.stringify(input.slice(0, 40))} → ${expected === REFUSED ? "E_PATH" : expected}`, () => {
      expect(attempt(input)).toBe(expected);
      if (expected === REFUSED) {
        expect(() => parseVfsPath(input)).toThrow(/invalid VFS path/);
        return;
      }
      const host = hostPathFor(HOST_ROOT, "/", expected);
      expect(host === HOST_ROOT || host.startsWith(`${HOST_ROOT}${sep}`)).toBe(true);
    });
  }

  it("names the path in the message and details", () => {
    try {
      parseVfsPath("a/../../etc/passwd");
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_PATH")).toBe(true);
      expect((error as Error).message).toContain('"a/../../etc/passwd"');
      expect((error as Error).message).toContain("escapes the root");
      expect((error as { details: object }).details).toMatchObject({ path: "a/../../etc/passwd" });
    }
  });

  it("refuses non-strings with a TypeError", () => {
    expect(() => parseVfsPath(42)).toThrow(TypeError);
  });
});

describe("parseVfsPath: trailing slash and helpers", () => {
  it("marks a trailing / or /. as a directory hint", () => {
    expect(parseVfsPath("a/b/").directoryHint).toBe(true);
    expect(parseVfsPath("a/b/.").directoryHint).toBe(true);
    expect(parseVfsPath("a/b").directoryHint).toBe(false);
    expect(parseVfsPath("/").directoryHint).toBe(false);
  });

  it("parent, base name, relative, join, descendant range", () => {
    expect(vfsParent("/a/b")).toBe("/a");
    expect(vfsParent("/a")).toBe("/");
    expect(vfsParent("/")).toBe("/");
    expect(vfsBaseName("/a/b")).toBe("b");
    expect(vfsRelative("/a", "/a/b/c")).toBe("b/c");
    expect(vfsRelative("/", "/a")).toBe("a");
    expect(vfsJoin("/base", "x/y")).toBe("/base/x/y");
    expect(vfsJoin("/base", "/")).toBe("/base");
    expect(() => vfsJoin("/base", "../x")).toThrow(/escapes the root/);
    expect(descendantRange("/a")).toEqual(["/a/", "/a0"]);
    expect(isVfsDescendant("/ab", "/a")).toBe(false);
    expect(isVfsDescendant("/a/b", "/a")).toBe(true);
  });
});

// Strings built from the pieces that matter to a normalizer, plus anything at all.
const piece = fc.constantFrom(
  "a",
  "b",
  "é",
  "e\u0301",
  "/",
  "//",
  ".",
  "..",
  "\\",
  "\0",
  "\n",
  "%2e",
  "\uff0e",
  "\uff0f",
  " ",
  "~",
);
const tricky = fc.oneof(
  fc.array(piece, { maxLength: 12 }).map((parts) => parts.join("")),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
);

describe("parseVfsPath: properties", () => {
  it("either refuses with E_PATH or returns a canonical, idempotent, NFC path", () => {
    fc.assert(
      fc.property(tricky, (input) => {
        const result = attempt(input);
        if (result === REFUSED) return;
        expect(result).toMatch(/^\/([^/]+(\/[^/]+)*)?$/);
        expect(result.split("/").filter((s) => s === "." || s === "..")).toEqual([]);
        expect(result).toBe(result.normalize("NFC"));
        expect(normalizeVfsPath(result)).toBe(result);
        expect(Buffer.byteLength(result)).toBeLessThanOrEqual(MAX_VFS_PATH_BYTES);
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees with POSIX resolution whenever it accepts, and refuses exactly the escapes", () => {
    const part = fc.constantFrom("a", "b", ".", "..", "");
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 10 }), (parts) => {
        const input = parts.join("/");
        let depth = 0;
        let escapes = false;
        for (const p of parts) {
          if (p === "..") escapes ||= --depth < 0;
          else if (p !== "" && p !== ".") depth++;
        }
        const result = attempt(input);
        if (input === "") expect(result).toBe(REFUSED);
        else if (escapes) expect(result).toBe(REFUSED);
        else expect(result).toBe(posix.resolve("/", input));
      }),
      { numRuns: 2000 },
    );
  });

  it("maps every accepted path inside the host root, and joins never leave their base", () => {
    fc.assert(
      fc.property(tricky, tricky, (a, b) => {
        const base = attempt(a);
        const rel = attempt(b);
        if (base === REFUSED || rel === REFUSED) return;
        const host = hostPathFor(HOST_ROOT, "/", base);
        expect(host === HOST_ROOT || host.startsWith(`${HOST_ROOT}${sep}`)).toBe(true);
        let joined: string;
        try {
          joined = vfsJoin(base, b);
        } catch (error) {
          // Only the length limit can refuse a join of two accepted paths.
          expect(isStateError(error, "E_PATH")).toBe(true);
          return;
        }
        expect(joined === base || isVfsDescendant(joined, base)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
