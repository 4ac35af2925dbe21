import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openRawSqlite } from "../../src/db/test-support/raw-sqlite.js";
import { openStateHome } from "../../src/home.js";
import { ageSession, DAY, startSession } from "../../src/maintenance/test-support/seed-home.js";
import { seedHome } from "../../src/server/test-support/seed-home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { CLI, requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const TOKEN = "e2e-token-abcdefghijklmnop";
const running: ChildProcess[] = [];

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

/** Starts `agentstate serve …` and resolves with the URL it prints once it listens. */
function serve(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; url: URL }> {
  const child = spawn(process.execPath, [CLI, "serve", ...args], {
    env: { ...process.env, AGENTSTATE_HOME: "", AGENTSTATE_TOKEN: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /(http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve({ child, url: new URL(match[1]) });
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.on("exit", (code) => resolve(code));
  });
}

describe("agentstate serve", () => {
  it("documents its flags", () => {
    const help = cli(["serve", "--help"]);
    expect(help.status).toBe(0);
    for (const flag of ["--host", "--port", "--token", "--write", "--home", "--maintain-every"]) {
      expect(help.stdout).toContain(flag);
    }
  });

  it("--maintain-every runs the home's maintenance on a timer, a line per run on stderr", async () => {
    const home = tempDir();
    const state = openStateHome({ home });
    const agent = state.agent("main");
    startSession(agent, "agent:main:a", "idle", 4);
    startSession(agent, "agent:main:b", "recent", 4);
    ageSession(agent, "idle", Date.now() - 10 * DAY);
    state.close();
    writeFileSync(join(home, "agentstate.json"), '{"maintenance": {"coldAfterDays": 7}}');

    const bad = cli(["serve", "--home", home, "--port", "0", "--maintain-every", "soon"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--maintain-every must be a duration/);

    const { child } = await serve(["--home", home, "--port", "0", "--maintain-every", "1s"]);
    let err = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    const deadline = Date.now() + 15_000;
    while (!/maintenance: .*\n/.test(err) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(err).toMatch(/^maintenance: 1 moved cold; 0 pruned; .*quick_check ok on 1 agents/m);
    const db = openRawSqlite(join(home, "agents", "main", "agent", "agent.sqlite"), {
      readonly: true,
    });
    const cold = db
      .prepare("SELECT session_id FROM cold_sessions JOIN sessions USING (session_no)")
      .pluck()
      .all();
    db.close();
    expect(cold).toEqual(["idle"]);
    child.kill("SIGTERM");
    expect(await exited(child)).toBe(0);
  });

  it("refuses a non-loopback host without a token, before listening", () => {
    const home = seedHome(tempDir()).home;
    for (const host of ["0.0.0.0", "::"]) {
      const result = cli(["serve", "--home", home, "--host", host, "--port", "0"]);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(/without a token/);
      expect(result.stdout).toBe("");
    }
    const badPort = cli(["serve", "--home", home, "--port", "70000"]);
    expect(badPort.status).toBe(2);
    const missing = cli(["serve", "--home", tempDir(), "--port", "0"]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toMatch(/no agentstate home/);
  });

  it("serves all interfaces with a token: 401 without it, 200 with it, exits cleanly on SIGTERM", async () => {
    const home = seedHome(tempDir()).home;
    const { child, url } = await serve([
      "--home",
      home,
      "--host",
      "0.0.0.0",
      "--port",
      "0",
      "--token",
      TOKEN,
    ]);
    expect(url.searchParams.get("token")).toBe(TOKEN);
    const api = `http://127.0.0.1:${url.port}/api/agents`;
    const anonymous = await fetch(api);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { error: { code: string } }).error.code).toBe(
      "E_UNAUTHORIZED",
    );
    const authorized = await fetch(api, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(authorized.status).toBe(200);
    const { agents } = (await authorized.json()) as { agents: Array<{ agentId: string }> };
    expect(agents.map((a) => a.agentId)).toEqual(["main", "research"]);
    const signIn = await fetch(`http://127.0.0.1:${url.port}/?token=${TOKEN}`, {
      redirect: "manual",
    });
    expect(signIn.status).toBe(303);
    child.kill("SIGTERM");
    expect(await exited(child)).toBe(0);
  });

  it("takes the token from AGENTSTATE_TOKEN, and is read-only without --write", async () => {
    const seeded = seedHome(tempDir());
    const { child, url } = await serve(["--home", seeded.home, "--port", "0"], {
      AGENTSTATE_TOKEN: TOKEN,
    });
    expect(url.hostname).toBe("127.0.0.1");
    const auth = { authorization: `Bearer ${TOKEN}` };
    const post = await fetch(
      `http://127.0.0.1:${url.port}/api/agents/main/transcripts/${seeded.activeId}/events`,
      {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({
          event: { type: "message", message: { role: "user", content: "hi" } },
        }),
      },
    );
    expect(post.status).toBe(403);
    expect(((await post.json()) as { error: { code: string } }).error.code).toBe("E_READ_ONLY");
    // An open live stream must not keep the server from shutting down.
    const stream = await fetch(`http://127.0.0.1:${url.port}/api/agents/main/stream`, {
      headers: auth,
    });
    expect(stream.status).toBe(200);
    child.kill("SIGINT");
    expect(await exited(child)).toBe(0);
  });

  it("says which port is taken", async () => {
    const home = seedHome(tempDir()).home;
    const { url } = await serve(["--home", home, "--port", "0"]);
    const second = cli(["serve", "--home", home, "--port", url.port]);
    expect(second.status).toBe(5);
    expect(second.stderr).toMatch(/is in use/);
  });
});
