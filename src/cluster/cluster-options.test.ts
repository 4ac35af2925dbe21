import { describe, expect, it } from "vitest";
import { checkClusterOptions } from "./cluster-options.js";

const base = { controlPlane: "postgres://h/db", host: "a", replicas: "/r" };

describe("checkClusterOptions", () => {
  it("fills the defaults: 10 s lease, a fifth of it as margin, 1 s sync, 1,000 agents", () => {
    expect(checkClusterOptions(base)).toEqual({
      ...base,
      leaseMs: 10_000,
      marginMs: 2_000,
      syncIntervalMs: 1_000,
      maxAgents: 1_000,
      durableTimeoutMs: 30_000,
    });
  });

  it("takes a file:// URL as the replica directory and refuses other schemes for now", () => {
    expect(checkClusterOptions({ ...base, replicas: "file:///mnt/replicas" }).replicas).toBe(
      "/mnt/replicas",
    );
    expect(() => checkClusterOptions({ ...base, replicas: "s3://bucket/agents" })).toThrow(
      expect.objectContaining({ code: "E_UNSUPPORTED" }),
    );
  });

  it("refuses misspelled options by name and a margin as long as the lease", () => {
    expect(() => checkClusterOptions({ ...base, leaseMS: 5 } as never)).toThrow(/leaseMS/);
    expect(() => checkClusterOptions({ ...base, leaseMs: 1_000, marginMs: 1_000 })).toThrow(
      expect.objectContaining({ code: "E_INVALID_ARGUMENT" }),
    );
  });
});
