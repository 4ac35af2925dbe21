// The engine each runtime gets, forcing one, and one database file read by both engines. Each
// engine runs in a child process of its own Node binary: better-sqlite3 is built for Node 20's
// ABI, and Node 20 has no node:sqlite.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { chooseDriver, DRIVER_ENV } from "../../src/db/driver-choice.js";
import { isStateError } from "../../src/db/errors.js";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { hostNode, majorOf, node24 } from "../support/runtimes.js";

const CHILD = fileURLToPath(new URL("./driver-child.mjs", import.meta.url));
const tempDir = useTempDirs();

interface Runtime {
  binary: string;
  major: number;
  /** The engine it picks on its own. */
  driver: "node" | "better-sqlite3";
}
let node20: Runtime;
let latest: Runtime;

beforeAll(() => {
  requireBuild();
  const host = hostNode();
  node20 = { binary: host, major: majorOf(host), driver: "better-sqlite3" };
  latest = { binary: node24(), major: majorOf(node24()), driver: "node" };
});

function child(
  runtime: Runtime,
  args: string[],
  env: Record<string, string | undefined> = {},
): Record<string, unknown> {
  const childEnv = { ...process.env, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
  const stdout = execFileSync(runtime.binary, [CHILD, ...args], { env: childEnv });
  return JSON.parse(stdout.toString());
}

const AUTO = { [DRIVER_ENV]: undefined };

describe("the automatic choice", () => {
  it("is better-sqlite3 on Node 20 and node:sqlite on Node 24", () => {
    expect(node20.major).toBe(20);
    expect(latest.major).toBe(24);
    expect(child(node20, ["choice"], AUTO)).toMatchObject({ driver: "better-sqlite3" });
    expect(child(latest, ["choice"], AUTO)).toMatchObject({ driver: "node" });
  });

  it("opens the home and its agent databases on that engine", () => {
    for (const runtime of [node20, latest]) {
      const home = join(tempDir(), "home");
      expect(child(runtime, ["open", home], AUTO)).toMatchObject({
        driver: runtime.driver,
        agent: runtime.driver,
      });
    }
  });
});

describe("forcing an engine", () => {
  it("by environment variable, or by option over it", () => {
    const home = join(tempDir(), "home");
    expect(child(node20, ["choice"], { [DRIVER_ENV]: "better-sqlite3" })).toMatchObject({
      driver: "better-sqlite3",
    });
    expect(child(latest, ["choice"], { [DRIVER_ENV]: "node" })).toMatchObject({ driver: "node" });
    // The option wins over the variable.
    expect(
      child(latest, ["open", home, "-", "node"], { [DRIVER_ENV]: "better-sqlite3" }),
    ).toMatchObject({ driver: "node", agent: "node" });
    expect(
      child(node20, ["open", home, "-", "better-sqlite3"], { [DRIVER_ENV]: "node" }),
    ).toMatchObject({ driver: "better-sqlite3", agent: "better-sqlite3" });
  });

  it("to one the runtime cannot run is E_UNSUPPORTED, saying why", () => {
    const home = join(tempDir(), "home");
    const refused = child(node20, ["open", home, "-", "node"], AUTO);
    expect(refused).toMatchObject({ error: { code: "E_UNSUPPORTED", name: "StateError" } });
    expect(String((refused.error as { message: string }).message)).toMatch(/has no node:sqlite/);
    expect(child(node20, ["choice"], { [DRIVER_ENV]: "node" })).toMatchObject({
      error: { code: "E_UNSUPPORTED" },
    });
  });

  it("by an unknown name is E_INVALID_ARGUMENT naming the choices", () => {
    const home = join(tempDir(), "home");
    let caught: unknown;
    try {
      openStateHome({ home, driver: "sqlite3" as never });
    } catch (error) {
      caught = error;
    }
    expect(isStateError(caught, "E_INVALID_ARGUMENT")).toBe(true);
    expect((caught as Error).message).toBe(
      'driver must be one of "node", "better-sqlite3"; got "sqlite3"',
    );
    const saved = process.env[DRIVER_ENV];
    process.env[DRIVER_ENV] = "sqlite";
    try {
      expect(() => chooseDriver()).toThrow(
        `$${DRIVER_ENV} must be one of "node", "better-sqlite3"; got "sqlite"`,
      );
    } finally {
      if (saved === undefined) delete process.env[DRIVER_ENV];
      else process.env[DRIVER_ENV] = saved;
    }
    for (const runtime of [node20, latest]) {
      expect(child(runtime, ["choice"], { [DRIVER_ENV]: "sqlite3" })).toMatchObject({
        error: { code: "E_INVALID_ARGUMENT" },
      });
    }
  });
});

describe("one database, both engines", () => {
  const blobSha = createHash("sha256")
    .update(Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7 + 3) % 256)))
    .digest("hex");

  for (const [writer, reader] of [
    ["better-sqlite3", "node"],
    ["node", "better-sqlite3"],
  ] as const) {
    it(`what ${writer} writes, ${reader} reads: search, a chunked VFS blob, a kv row`, () => {
      const [from, to] = writer === "node" ? [latest, node20] : [node20, latest];
      const home = join(tempDir(), "home");
      const word = `basil${writer.replace(/\W/g, "")}`;
      const written = child(from, ["write", home, word], AUTO);
      expect(written).toMatchObject({ driver: writer });
      expect(child(to, ["read", home, word], AUTO)).toEqual({
        driver: reader,
        hits: [{ sessionId: written.sessionId, snippet: expect.stringContaining(word) }],
        blobIsBuffer: true,
        blobSha,
        writtenBy: writer,
      });
    });
  }
});
