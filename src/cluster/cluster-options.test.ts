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
      replicaTarget: { kind: "file", directory: "/r" },
    });
  });

  it("takes a file:// URL as the replica directory and refuses schemes other than s3://", () => {
    expect(checkClusterOptions({ ...base, replicas: "file:///mnt/replicas" }).replicas).toBe(
      "/mnt/replicas",
    );
    expect(() => checkClusterOptions({ ...base, replicas: "gs://bucket/agents" })).toThrow(
      expect.objectContaining({ code: "E_UNSUPPORTED" }),
    );
  });

  it("takes an s3:// URL: bucket and prefix, AWS by default, path-style once an endpoint is set", () => {
    expect(
      checkClusterOptions({ ...base, replicas: "s3://bkt/agents/prod/" }).replicaTarget,
    ).toEqual({
      kind: "s3",
      bucket: "bkt",
      prefix: "agents/prod",
      endpoint: undefined,
      region: "us-east-1",
      forcePathStyle: false,
    });
    const minio = checkClusterOptions({
      ...base,
      replicas: "s3://bkt",
      s3: { endpoint: "http://127.0.0.1:9000/", region: "eu-west-1" },
    });
    expect(minio.replicaTarget).toMatchObject({
      prefix: "",
      endpoint: "http://127.0.0.1:9000",
      region: "eu-west-1",
      forcePathStyle: true,
    });
    expect(minio.replicas).toBe("s3://bkt");
  });

  it("refuses s3 options on file replicas, misspelled ones, and an endpoint with credentials", () => {
    expect(() => checkClusterOptions({ ...base, s3: { region: "x" } })).toThrow(
      expect.objectContaining({ code: "E_INVALID_ARGUMENT" }),
    );
    const s3 = { ...base, replicas: "s3://bkt/p" };
    expect(() => checkClusterOptions({ ...s3, s3: { pathStyle: true } as never })).toThrow(
      /pathStyle/,
    );
    expect(() => checkClusterOptions({ ...s3, s3: { endpoint: "http://k:s@h:9000" } })).toThrow(
      expect.objectContaining({ code: "E_INVALID_ARGUMENT" }),
    );
  });

  it("refuses misspelled options by name and a margin as long as the lease", () => {
    expect(() => checkClusterOptions({ ...base, leaseMS: 5 } as never)).toThrow(/leaseMS/);
    expect(() => checkClusterOptions({ ...base, leaseMs: 1_000, marginMs: 1_000 })).toThrow(
      expect.objectContaining({ code: "E_INVALID_ARGUMENT" }),
    );
  });
});
