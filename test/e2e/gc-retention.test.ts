import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const DAY = 24 * 60 * 60 * 1000;
const QUEUE = "outbound-delivery";

/** Completed and waiting inputs of agent main, sent and pending deliveries, one of each aged. */
function seededHome(): string {
  const home = tempDir();
  const state = openStateHome({ home });
  const complete = (key: string, name: string) => {
    state.inputs.accept("main", key, { idempotencyKey: name, payload: name, inputId: name });
    const [held] = state.inputs.claim("main", key, "turn", { leaseMs: 60_000 });
    state.inputs.complete("main", held?.inputId ?? "", "turn");
  };
  for (const name of ["k1", "k2", "k3"]) complete("k", name);
  complete("j", "j1");
  state.inputs.accept("main", "w", { idempotencyKey: "w1", payload: 1, inputId: "waiting" });
  for (const id of ["s1", "s2", "s3"]) {
    state.queue.enqueue(QUEUE, { id, payload: { text: id } });
    const claimed = state.queue.claim(QUEUE, "gateway");
    state.queue.settle(QUEUE, id, claimed?.leaseId ?? "");
  }
  state.queue.enqueue(QUEUE, { id: "p1", payload: {}, availableAt: Date.now() + 365 * DAY });
  // Aged by hand: j1 completed and s1 settled 40 days ago.
  state.agent("main").db.exec(`UPDATE inputs SET completed_at = ${Date.now() - 40 * DAY}
    WHERE input_id = 'j1'`);
  state.db.exec(`UPDATE delivery_queue_entries SET settled_at = ${Date.now() - 40 * DAY}
    WHERE id = 's1'`);
  state.close();
  return home;
}

function remaining(home: string) {
  const state = openStateHome({ home, create: false });
  const inputs = state
    .agent("main")
    .db.prepare<{ input_id: string }>("SELECT input_id FROM inputs ORDER BY arrival_seq")
    .all()
    .map((r) => r.input_id);
  const receipts = state.db
    .prepare<{ id: string }>("SELECT id FROM delivery_queue_entries ORDER BY id")
    .all()
    .map((r) => r.id);
  state.close();
  return { inputs, receipts };
}

describe("agentstate gc: retention", () => {
  it("removes completed inputs and sent deliveries past 30 days by default, nothing open", () => {
    const home = seededHome();
    const result = cli(["gc", "--home", home, "--json"]);
    expect(result.status, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.retainedTotal).toBe(2);
    expect(report.databases[0].retained).toEqual({ delivery_queue_entries: 1 });
    expect(report.databases[1]).toMatchObject({ agentId: "main", retained: { inputs: 1 } });
    expect(remaining(home)).toEqual({
      inputs: ["k1", "k2", "k3", "waiting"],
      receipts: ["p1", "s2", "s3"],
    });
  });

  it("takes the age and the counts from --keep-days, --keep-inputs and --keep-receipts", () => {
    const home = seededHome();
    const result = cli([
      "gc",
      "--home",
      home,
      "--keep-days",
      "60",
      "--keep-inputs",
      "1",
      "--keep-receipts",
      "2",
    ]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("3 rows past retention removed");
    expect(result.stdout).toMatch(/main\s+inputs \(retention\)\s+2/);
    // The latest completed input of each key stays, the oldest sent delivery goes.
    expect(remaining(home)).toEqual({
      inputs: ["k3", "j1", "waiting"],
      receipts: ["p1", "s2", "s3"],
    });
  });

  it("takes the home's retention from agentstate.json, and a flag wins over it for one run", () => {
    const home = seededHome();
    const config = {
      retention: { inputsMaxAgeDays: 60, inputsPerSession: 1, receiptsPerQueue: 1 },
    };
    writeFileSync(join(home, "agentstate.json"), JSON.stringify(config));
    const result = cli(["gc", "--home", home, "--keep-receipts", "2", "--json"]);
    expect(result.status, result.stderr).toBe(0);
    // Inputs by the file (60 days keeps j1, one per key keeps k3); receipts by the flag (two, and
    // the file's default age of 30 days takes s1 anyway).
    expect(remaining(home)).toEqual({
      inputs: ["k3", "j1", "waiting"],
      receipts: ["p1", "s2", "s3"],
    });
    writeFileSync(join(home, "agentstate.json"), '{"retention": {"inputsPerSession": -1}}');
    const bad = cli(["gc", "--home", home]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("agentstate.json: retention.inputsPerSession");
  });

  it("refuses a retention flag that is not a whole number, with exit code 2", () => {
    const result = cli(["gc", "--home", seededHome(), "--keep-days", "a week"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("--keep-days");
  });

  it("documents the retention flags in --help", () => {
    const help = cli(["gc", "--help"]).stdout;
    for (const flag of ["--keep-days", "--keep-inputs", "--keep-receipts"]) {
      expect(help).toContain(flag);
    }
  });
});
