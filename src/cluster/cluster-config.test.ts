import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPolicy } from "../maintenance/policy.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { loadClusterConfig } from "./cluster-config.js";
import { type ClusterOptions, checkClusterOptions } from "./cluster-options.js";

const tempDir = useTempDirs();

function homeWith(config: unknown): string {
  const home = tempDir();
  writeFileSync(join(home, "agentstate.json"), JSON.stringify(config));
  return home;
}

const section = { controlPlane: "postgres://file/db", host: "a", replicas: "replicas" };

describe("loadClusterConfig", () => {
  it("is undefined for a home without the file or without a cluster section", () => {
    expect(loadClusterConfig(tempDir(), { env: {} })).toBeUndefined();
    expect(loadClusterConfig(homeWith({ maintenance: {} }), { env: {} })).toBeUndefined();
  });

  it("reads the section, with the replicas relative to the home and the defaults filled", () => {
    const home = homeWith({ cluster: { ...section, leaseMs: 3_000 } });
    expect(loadClusterConfig(home, { env: {} })).toMatchObject({
      controlPlane: "postgres://file/db",
      host: "a",
      replicas: join(home, "replicas"),
      leaseMs: 3_000,
      marginMs: 600,
    });
  });

  it("reads a bucket replica with its s3 options, as openClusterHome takes them", () => {
    const s3 = { endpoint: "http://127.0.0.1:9000", region: "eu-west-1" };
    const home = homeWith({ cluster: { ...section, replicas: "s3://bucket/agents", s3 } });
    const options = loadClusterConfig(home, { env: {} });
    expect(options).toMatchObject({ replicas: "s3://bucket/agents", s3 });
    // What `agentstate serve` hands to openClusterHome passes its check as it is.
    expect(checkClusterOptions(options as ClusterOptions).replicaTarget).toMatchObject({
      kind: "s3",
    });
  });

  it("takes the control plane from $AGENTSTATE_CONTROL_PLANE, the host from the flag, then $AGENTSTATE_HOST", () => {
    const home = homeWith({ cluster: section });
    const env = { AGENTSTATE_CONTROL_PLANE: "postgres://env/db", AGENTSTATE_HOST: "env-host" };
    expect(loadClusterConfig(home, { env })).toMatchObject({
      controlPlane: "postgres://env/db",
      host: "env-host",
    });
    expect(loadClusterConfig(home, { env, host: "flag-host" })?.host).toBe("flag-host");
  });

  it("names the variable or flag, not the file, when their value is the bad one", () => {
    const home = homeWith({ cluster: section });
    expect(() => loadClusterConfig(home, { env: {}, host: "" })).toThrow(/^--cluster-host: host/);
  });

  it("names the file and the key of a bad section; the maintenance policy still reads the file", () => {
    const home = homeWith({ cluster: { ...section, maxAgents: 0 } });
    const file = join(home, "agentstate.json");
    expect(() => loadClusterConfig(home, { env: {} })).toThrow(
      expect.objectContaining({
        code: "E_INVALID_ARGUMENT",
        message: expect.stringContaining(`${file}: cluster.maxAgents: maxAgents must be`),
      }),
    );
    expect(() => loadClusterConfig(homeWith({ cluster: [] }), { env: {} })).toThrow(
      /: cluster: must be an object/,
    );
    expect(loadPolicy(home).fileFound).toBe(true);
  });
});
