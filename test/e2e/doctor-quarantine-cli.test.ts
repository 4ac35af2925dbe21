import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { headerLine, messageLine } from "../../src/doctor/test-support/legacy-lines.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const SESSION = "7c1d2e3f-4a5b-4c6d-8e9f-a0b1c2d3e4f5";
const TRANSCRIPT = `agents/main/sessions/${SESSION}.jsonl`;
const RUNS = "cron/runs/nightly.jsonl";
const BROKEN = Buffer.from('{"type":"message","id":"cut-off","message":{"ro');
const NOT_UTF8 = Buffer.from([0x7b, 0x22, 0x74, 0x73, 0x22, 0x3a, 0xff, 0xfe, 0x7d]);

/** A legacy home: a transcript with a broken line 3, a cron run log with invalid UTF-8 on line 2. */
function legacyHome(): string {
  const home = join(tempDir(), "home");
  mkdirSync(join(home, "agents/main/sessions"), { recursive: true });
  mkdirSync(join(home, "cron/runs"), { recursive: true });
  const transcript = [
    Buffer.from(headerLine(SESSION)),
    Buffer.from(messageLine("a1", null, "first")),
    BROKEN,
    Buffer.from(messageLine("a2", "a1", "second")),
  ];
  writeFileSync(
    join(home, TRANSCRIPT),
    Buffer.concat(transcript.flatMap((l) => [l, Buffer.from("\n")])),
  );
  const run = (ts: number) =>
    Buffer.from(JSON.stringify({ ts, jobId: "nightly", action: "finished", status: "ok" }));
  writeFileSync(
    join(home, RUNS),
    Buffer.concat(
      [run(1_700_000_000_000), NOT_UTF8, run(1_700_000_060_000)].flatMap((l) => [
        l,
        Buffer.from("\n"),
      ]),
    ),
  );
  return home;
}

describe("agentstate doctor --fix --quarantine", () => {
  it("fails partial without it, succeeds with it, and lists every quarantined line", () => {
    const home = legacyHome();
    const plain = cli(["doctor", "--fix", "--home", home]);
    expect(plain.status).toBe(1);
    expect(plain.stdout).toContain(`${TRANSCRIPT}:3: invalid JSON`);
    expect(plain.stdout).toContain("--quarantine");

    const plan = cli(["doctor", "--home", home]);
    expect(plan.status).toBe(0);
    expect(plan.stdout).toMatch(/imported in part before: 0 of its 3 records/);

    const fixed = cli(["doctor", "--fix", "--quarantine", "--home", home]);
    expect(fixed.stderr).toBe("");
    expect(fixed.status).toBe(0);
    expect(fixed.stdout).toContain("doctor --fix: succeeded");
    expect(fixed.stdout).toContain("2 line(s) quarantined");
    expect(existsSync(join(home, TRANSCRIPT))).toBe(false);
    expect(existsSync(join(home, RUNS))).toBe(false);
    expect(cli(["doctor", "--fix", "--quarantine", "--home", home]).stdout).toContain(
      "nothing-to-do",
    );

    const history = cli(["doctor", "--history", "--home", home]);
    expect(history.status).toBe(0);
    expect(history.stdout).toMatch(/QUARANTINED/);
    expect(history.stdout).toContain(`${TRANSCRIPT}:3: invalid JSON`);
    expect(history.stdout).toContain(`${RUNS}:2: invalid UTF-8 (quarantined)`);
    const runs = JSON.parse(cli(["doctor", "--history", "--json", "--home", home]).stdout);
    const quarantining = runs.find((r: { status: string }) => r.status === "succeeded");
    expect(quarantining.quarantined).toBe(2);

    const listed = cli(["doctor", "--quarantined", "--home", home]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(`${RUNS}:2`);
    expect(listed.stdout).toContain(`${TRANSCRIPT}:3`);
    const json = JSON.parse(cli(["doctor", "--quarantined", "--json", "--home", home]).stdout);
    const byWhere = new Map(
      json.map((l: { path: string; line: number }) => [`${l.path}:${l.line}`, l]),
    );
    const cron = byWhere.get(`${RUNS}:2`) as { base64: string; reason: string; runId: string };
    expect(Buffer.from(cron.base64, "base64").equals(NOT_UTF8)).toBe(true);
    expect(cron.reason).toBe("invalid UTF-8");
    expect(cron.runId).toBe(quarantining.id);
    const cut = byWhere.get(`${TRANSCRIPT}:3`) as { base64: string };
    expect(Buffer.from(cut.base64, "base64").equals(BROKEN)).toBe(true);

    // The raw export is the lines themselves, in path order, byte for byte.
    const out = join(tempDir(), "quarantined.jsonl");
    const exported = cli(["doctor", "--quarantined", "--out", out, "--home", home]);
    expect(exported.status).toBe(0);
    expect(
      readFileSync(out).equals(
        Buffer.concat([BROKEN, Buffer.from("\n"), NOT_UTF8, Buffer.from("\n")]),
      ),
    ).toBe(true);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(cli(["doctor", "--quarantined", "--out", out, "--home", home]).status).toBe(5);
  });

  it("refuses --quarantine without --fix and --out without --quarantined", () => {
    const home = legacyHome();
    const alone = cli(["doctor", "--quarantine", "--home", home]);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain("--quarantine only makes sense with --fix");
    expect(cli(["doctor", "--out", "x", "--home", home]).status).toBe(2);
    expect(cli(["doctor", "--help"]).stdout).toContain("doctor --fix --quarantine");
  });
});
