import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { loadPolicy, rulesFor } from "./policy.js";
import { writeConfig } from "./test-support/seed-home.js";

const tempDir = useTempDirs();

function errorOf(config: unknown): { path: unknown; message: string } {
  const home = tempDir();
  writeConfig(home, config);
  try {
    loadPolicy(home);
  } catch (error) {
    if (!isStateError(error, "E_INVALID_ARGUMENT")) throw error;
    return { path: error.details.path, message: error.message };
  }
  throw new Error("expected the config to be refused");
}

describe("loadPolicy", () => {
  it("without agentstate.json: every rule off, from the defaults", () => {
    const policy = loadPolicy(tempDir());
    expect(policy.fileFound).toBe(false);
    expect(policy.home).toMatchObject({
      mode: "enforce",
      coldAfterDays: null,
      pruneAfterDays: null,
    });
    expect(policy.home.sources.coldAfterDays).toBe("default");
  });

  it("layers the file, an agent's own rules and the run's overrides, and says where each came from", () => {
    const home = tempDir();
    writeConfig(home, {
      maintenance: {
        coldAfterDays: 30,
        maxDiskBytes: 1000,
        agents: { ops: { coldAfterDays: 7, mode: "warn" } },
      },
    });
    const policy = loadPolicy(home, { pruneAfterDays: 90 });
    expect(policy.home).toMatchObject({
      coldAfterDays: 30,
      pruneAfterDays: 90,
      highWaterBytes: 800,
    });
    expect(policy.home.sources).toMatchObject({
      pruneAfterDays: "--prune-after",
      highWaterBytes: "80% of maxDiskBytes",
    });
    const ops = rulesFor(policy, "ops");
    expect(ops).toMatchObject({
      coldAfterDays: 7,
      mode: "warn",
      pruneAfterDays: 90,
      maxDiskBytes: null,
    });
    expect(ops.sources.coldAfterDays).toBe("agentstate.json agents.ops");
    expect(rulesFor(policy, "main")).toBe(policy.home);
  });

  it("names the key path of a bad type, an unknown key, a bad mode and bad JSON", () => {
    expect(errorOf({ maintenance: { agents: { main: { keepRecent: 1.5 } } } }).path).toBe(
      "maintenance.agents.main.keepRecent",
    );
    expect(errorOf({ maintenance: { agents: { main: { agents: {} } } } }).path).toBe(
      "maintenance.agents.main.agents",
    );
    expect(errorOf({ maintenance: { mode: "loud" } }).path).toBe("maintenance.mode");
    expect(errorOf({ maintenance: { coldAfterDays: -1 } }).message).toMatch(
      /agentstate\.json: maintenance\.coldAfterDays: /,
    );
    expect(errorOf({ maintenance: { maxDiskBytes: 10, highWaterBytes: 20 } }).path).toBe(
      "maintenance.highWaterBytes",
    );
    expect(errorOf("[").path).toBe("");
  });
});
