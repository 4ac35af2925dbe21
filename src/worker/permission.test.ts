import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { permissionFlags, permissionGrants } from "./permission.js";
import { prepareAgentRun } from "./prepared-run.js";

const home = "/srv/agentstate";

function runWith(filesystem: object, permission: object = { mode: "enforce" }) {
  return prepareAgentRun(
    {
      agentId: "main",
      session: { sessionKey: "k", sessionId: "s" },
      input: "",
      backend: { kind: "scripted", steps: [] },
      filesystem,
      permission,
    },
    home,
  ).run;
}

describe("permissionGrants", () => {
  it("vfs-only: the code, this agent's database, the global database and the run's temp dir", () => {
    const grants = permissionGrants(runWith({ mode: "vfs-only" }), "/tmp/run-1");
    expect(grants.write).toEqual([
      join(home, "state"),
      join(home, "agents/main/agent"),
      "/tmp/run-1",
    ]);
    expect(grants.read).toEqual(expect.arrayContaining(grants.write));
    expect(grants.read.some((path) => path.startsWith(join(home, "agents/other")))).toBe(false);
    expect(grants.read).not.toContain(home);
    // Opening the home looks for a pending restore: Node 24 checks that lstat against the grants.
    expect(grants.read).toContain(join(home, ".agentstate-restore"));
    expect(grants.write).not.toContain(join(home, ".agentstate-restore"));
    expect(grants).toMatchObject({ childProcess: false, worker: false, addons: true });
  });

  it("disk modes add the workspace; extras and child processes only when the profile asks", () => {
    const run = runWith(
      { mode: "disk", workspace: "/work/repo" },
      { mode: "enforce", allowChildProcess: true, read: ["/opt/models"], write: ["/var/cache/x"] },
    );
    const grants = permissionGrants(run, "/tmp/run-2");
    expect(grants.write).toEqual(expect.arrayContaining(["/work/repo", "/var/cache/x"]));
    expect(grants.read).toEqual(expect.arrayContaining(["/work/repo", "/opt/models"]));
    expect(grants.childProcess).toBe(true);
  });

  it("renders one flag per path, and no child-process or worker flag by default", () => {
    const flags = permissionFlags(permissionGrants(runWith({ mode: "vfs-only" }), "/tmp/r"));
    expect(flags[0]).toMatch(/^--(experimental-)?permission$/);
    expect(flags).toContain("--allow-fs-write=/tmp/r");
    expect(flags).toContain("--allow-addons");
    expect(flags).not.toContain("--allow-child-process");
    expect(flags).not.toContain("--allow-worker");
    expect(flags.every((flag) => !flag.includes(","))).toBe(true);
  });
});
