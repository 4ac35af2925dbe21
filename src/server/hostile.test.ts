import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStateHome, type StateHome } from "../home.js";
import { countRows } from "../status/describe-home.js";
import { createApp, type ServerApp } from "./app.js";
import { type SeededHome, seedHome } from "./test-support/seed-home.js";

// Parameters a hostile or careless client can send: each must come back as a 4xx with a JSON
// error code (400 when malformed, 404 when well-formed but absent), never a 500, and nothing in
// the home may change.

const LOCAL = "http://127.0.0.1:4711";

let seeded: SeededHome;
let home: StateHome;
let server: ServerApp;
let rowsBefore: Record<string, number>;

// One home for the whole file (the per-test temp dirs would vanish under the open home).
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "agentstate-hostile-"));
  seeded = seedHome(dir);
  home = openStateHome({ home: dir, create: false });
  server = createApp({ home });
  const agent = home.agent("main", { create: false });
  // A search indexes what the writers left pending (a legitimate write): done first, so that
  // whatever the hostile requests below do, no row may change.
  agent.transcripts.index.indexPending();
  rowsBefore = countRows(agent.db);
});

afterAll(() => {
  server.close();
  home.close();
  rmSync(dir, { recursive: true, force: true });
});

async function status(path: string): Promise<{ status: number; code: string | undefined }> {
  const response = await server.app.request(`${LOCAL}${path}`);
  const body = (await response.json()) as { error?: { code: string } };
  return { status: response.status, code: body.error?.code };
}

const BAD_REQUESTS: string[] = [
  // Path traversal in every spelling a router might decode.
  "/api/agents/..%2F..%2Fetc/sessions",
  "/api/agents/..%5C..%5Cwindows/sessions",
  "/api/agents/main%00/sessions",
  "/api/agents/.hidden/sessions",
  `/api/agents/${"a".repeat(65)}/sessions`,
  // Malformed percent-encoding and bytes that are not UTF-8.
  "/api/agents/%FF/sessions",
  "/api/agents/%C3%28/sessions",
  "/api/agents/main/sessions?prefix=%E0%A4",
  "/api/agents/main/sessions/%ED%A0%80",
  "/api/search?q=%",
  "/api/search?q=%zz",
  // Numbers: huge, negative, fractional, exponent, hex, not numbers.
  "/api/agents/main/sessions?limit=99999999999999999999999",
  "/api/agents/main/sessions?limit=1e400",
  "/api/agents/main/sessions?limit=-1",
  "/api/agents/main/sessions?limit=0",
  "/api/agents/main/sessions?limit=1.5",
  "/api/agents/main/sessions?limit=0x10",
  "/api/agents/main/sessions?limit=NaN",
  "/api/agents/main/sessions?limit=Infinity",
  "/api/agents/main/sessions?updatedSince=tomorrow",
  "/api/agents/main/sessions?updatedSince=99999999999999999999",
  `/api/agents/main/transcripts/${"s".repeat(10)}/events?afterSeq=9007199254740993`,
  "/api/agents/main/transcripts/x/events?limit=100000",
  "/api/search?q=basil&limit=501",
  "/api/migrations?limit=1000000000",
  // SQL fragments where a number, an enum or a cursor belongs.
  "/api/agents/main/sessions?limit=1;DROP TABLE sessions",
  "/api/agents/main/sessions?limit=1 OR 1=1",
  "/api/agents/main/sessions?cursor=' OR '1'='1",
  "/api/agents/main/sessions?cursor=WzEsMiwzXQ",
  "/api/agents/main/memory/facts?category=background' OR 1=1 --",
  "/api/agents/main/memory/topics?status=open;DELETE FROM topics",
  "/api/agents/main/memory/facts?includeSensitive=yes",
  // Unknown, repeated and empty parameters.
  "/api/agents/main/sessions?limitt=5",
  "/api/agents/main/sessions?limit=5&limit=6",
  "/api/search",
  "/api/search?q=",
  "/api/search?q=%20%20",
  `/api/search?q=${"basil ".repeat(300)}`,
  // Control characters in ids and keys.
  "/api/agents/main/transcripts/a%0Ab/events",
  "/api/agents/main/sessions/key%00with-nul",
];

const NOT_FOUND: string[] = [
  // Well-formed ids and keys that only look dangerous: bound as values, matched by nothing.
  "/api/agents/main/transcripts/'%20OR%20'1'%3D'1/events",
  "/api/agents/main/transcripts/1%3BDROP%20TABLE%20sessions/events",
  "/api/agents/main/transcripts/..%2F..%2Fstate/tree",
  "/api/agents/main/sessions/agent%3Amain%3A'%20OR%201%3D1%20--",
  "/api/agents/nobody/sessions",
  "/api/migrations/'%3B%20DROP%20TABLE%20migration_runs%3B--",
  "/api/nope",
  // URL normalisation resolves dot segments before routing: these name no endpoint at all.
  "/api/agents/../sessions",
  "/api/agents/%2e%2e/sessions",
  "/../../etc/passwd",
  "/%2e%2e/%2e%2e/etc/passwd",
  "/index.html/../../package.json",
];

describe("hostile parameters", () => {
  for (const path of BAD_REQUESTS) {
    it(`400 for ${path.slice(0, 90)}`, async () => {
      expect(await status(path)).toEqual({ status: 400, code: "E_INVALID_ARGUMENT" });
    });
  }
  for (const path of NOT_FOUND) {
    it(`404 for ${path.slice(0, 90)}`, async () => {
      expect(await status(path)).toEqual({ status: 404, code: "E_NOT_FOUND" });
    });
  }

  it("treats search operators and quotes as plain words", async () => {
    for (const q of ['basil" OR "x', "basil*", "NEAR(basil tomatoes)", "text:basil", "-basil ^"]) {
      const response = await server.app.request(`${LOCAL}/api/search?q=${encodeURIComponent(q)}`);
      expect(response.status).toBe(200);
    }
  });

  it("never answers 5xx to random bytes in any parameter", async () => {
    const templates = [
      (x: string) => `/api/agents/${x}/sessions`,
      (x: string) => `/api/agents/main/sessions/${x}`,
      (x: string) => `/api/agents/main/sessions?prefix=${x}&cursor=${x}`,
      (x: string) => `/api/agents/main/sessions/${x}/inputs?state=${x}&afterSeq=${x}`,
      (x: string) => `/api/agents/main/sessions/${x}/deliveries?status=${x}&queue=${x}`,
      (x: string) => `/api/agents/main/transcripts/${x}/events?afterSeq=${x}`,
      (x: string) => `/api/agents/main/transcripts/${x}/tree`,
      (x: string) => `/api/search?q=${x}&agentId=main`,
      (x: string) => `/api/agents/main/memory/facts?scope=${x}`,
      (x: string) => `/api/migrations/${x}`,
    ];
    const percentBytes = fc
      .uint8Array({ minLength: 1, maxLength: 40 })
      .map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, "0")}`).join(""));
    const text = fc.string({ unit: "grapheme", maxLength: 40 }).map(encodeURIComponent);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...templates),
        fc.oneof(percentBytes, text),
        async (template, x) => {
          const response = await server.app.request(`${LOCAL}${template(x)}`);
          expect(response.status).toBeLessThan(500);
          const body = (await response.json()) as { error?: { code: string } };
          if (response.status >= 400) expect(body.error?.code).toMatch(/^E_/);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("left every table as it was", () => {
    expect(countRows(home.agent("main", { create: false }).db)).toEqual(rowsBefore);
    expect(home.transcripts.listScopes({ agentId: "main" }).length).toBeGreaterThan(0);
    expect(seeded.sessionId).toEqual(expect.any(String));
  });
});
