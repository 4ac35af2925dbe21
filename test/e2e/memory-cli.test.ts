import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { openStateHome } from "../../src/home.js";
import { useTempDirs } from "../../src/test-support/temp-dir.js";
import { requireBuild } from "../support/built.js";
import { cli } from "../support/cli.js";

const tempDir = useTempDirs();
beforeAll(requireBuild);

const KEY = "agent:main:main";
const LEAKED = "sk-live-7QmZ2xR9vK4pT1nB8cW3yL6hJ0dF5gS";

interface Seeded {
  home: string;
  sessionId: string;
}

/** A session that worked on topic A, then B; facts of every sensitivity and policy. */
function seed(): Seeded {
  const dir = tempDir();
  const home = openStateHome({ home: dir });
  try {
    const { sessionId } = home.sessions.start("main", KEY);
    const scope = { agentId: "main", sessionId };
    const ask = home.transcripts.append(scope, {
      type: "message",
      message: { role: "user", content: [{ type: "text", text: "Set up the deploy runner" }] },
    });
    home.memory.createTopic(scope, {
      topicId: "deploy",
      title: "Deploy pipeline",
      labels: ["infra"],
      summaryShort: "Runner picked; secrets not wired",
      openLoops: ["wire DEPLOY_KEY"],
    });
    home.memory.link("main", "deploy", { eventId: ask.event.id, isPrimary: true });
    home.memory.switchTopic(scope, "deploy");
    home.memory.createTopic(scope, {
      topicId: "invoices",
      title: "March invoices",
      labels: ["billing"],
      openLoops: ["ask Dana for the Acme invoice", "send totals to accounting"],
    });
    home.memory.switchTopic(scope, "invoices");
    const fact = (input: Parameters<typeof home.memory.upsertFact>[1]) =>
      home.memory.upsertFact("main", input);
    fact({
      scope: "user",
      key: "name",
      category: "background",
      value: "Dana",
      recallPolicy: "always",
    });
    fact({
      scope: "agent",
      key: "openai.api_key",
      category: "account",
      value: "env:OPENAI_API_KEY",
      sensitivity: "secret_ref",
      recallPolicy: "always",
    });
    fact({
      scope: "agent",
      key: "stripe.key",
      category: "account",
      value: "keychain:stripe/live",
      sensitivity: "secret_ref",
      recallPolicy: "on_demand",
    });
    fact({
      scope: "project:web",
      key: "runner.host",
      category: "environment",
      value: "build-02.internal",
      recallPolicy: "topic_bound",
      tags: ["infra"],
    });
    fact({
      scope: "user",
      key: "bank.iban",
      category: "account",
      value: "DE89 3704 0044 0532 0130 00",
      sensitivity: "sensitive",
      recallPolicy: "always",
    });
    fact({ scope: "user", key: "coffee", category: "preference", value: "flat white" });
    // A row whose value is the secret itself, as a hand edit or an older writer could leave it.
    home
      .agent("main")
      .db.prepare("UPDATE facts SET value = ? WHERE key = 'stripe.key'")
      .run(LEAKED);
    return { home: dir, sessionId };
  } finally {
    home.close();
  }
}

const run = (home: string, ...args: string[]) => cli(["memory", ...args, "--home", home]);

describe("agentstate memory --help", () => {
  for (const command of [
    ["memory"],
    ["memory", "topics"],
    ["memory", "facts"],
    ["memory", "recall"],
  ]) {
    it(`documents ${command.join(" ")}`, () => {
      const result = cli([...command, "--help"]);
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/Usage: agentstate memory/);
      if (command.length === 2) {
        for (const flag of ["--agent", "--home", "--json"]) expect(result.stdout).toContain(flag);
      }
    });
  }
});

describe("agentstate memory topics", () => {
  it("lists topics with the active one marked, as a table and as JSON", () => {
    const { home, sessionId } = seed();
    const table = run(home, "topics", "--agent", "main");
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      /^\s+TOPIC\s+SESSION\s+STATUS\s+LAST ACTIVE\s+LOOPS\s+LABELS\s+TITLE$/m,
    );
    expect(table.stdout).toMatch(
      new RegExp(
        `^\\*\\s+invoices\\s+${sessionId}\\s+open\\s.*\\s2\\s+billing\\s+March invoices$`,
        "m",
      ),
    );
    expect(table.stdout).toMatch(/^\s+deploy\s+\S+\s+paused\s.*\s1\s+infra\s+Deploy pipeline$/m);

    const json = JSON.parse(
      run(home, "topics", "--agent", "main", "--session", sessionId, "--json").stdout,
    );
    expect(json.map((t: { topicId: string; active: boolean }) => [t.topicId, t.active])).toEqual([
      ["invoices", true],
      ["deploy", false],
    ]);
    expect(json[1]).toMatchObject({ summaryShort: "Runner picked; secrets not wired" });
    const paused = JSON.parse(
      run(home, "topics", "--agent", "main", "--status", "paused", "--json").stdout,
    );
    expect(paused.map((t: { topicId: string }) => t.topicId)).toEqual(["deploy"]);
  });
});

describe("agentstate memory facts", () => {
  it("shows secret_ref facts as references and hides sensitive values unless asked", () => {
    const { home } = seed();
    const table = run(home, "facts", "--agent", "main");
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^SCOPE\s+KEY\s+CATEGORY\s+SENSITIVITY\s+RECALL\s+CONF\s+VALUE$/m);
    expect(table.stdout).toMatch(
      /^agent\s+openai\.api_key\s+account\s+secret_ref\s+always\s+1\.00\s+→ env:OPENAI_API_KEY$/m,
    );
    expect(table.stdout).toMatch(/stripe\.key .*\(secret: reference withheld\)$/m);
    expect(table.stdout).toMatch(/bank\.iban .*\(sensitive: hidden\)$/m);
    expect(run(home, "facts", "--agent", "main", "--include-sensitive").stdout).toContain(
      "DE89 3704",
    );

    const json = JSON.parse(
      run(home, "facts", "--agent", "main", "--category", "account", "--json").stdout,
    );
    // By scope, then key; the sensitive value is withheld without --include-sensitive.
    const shown = json.map((f: { key: string; value: unknown; reference: unknown }) => [
      f.key,
      f.value,
      f.reference,
    ]);
    expect(shown).toEqual([
      ["openai.api_key", null, "env:OPENAI_API_KEY"],
      ["stripe.key", null, null],
      ["bank.iban", null, null],
    ]);
    const policy = JSON.parse(
      run(home, "facts", "--agent", "main", "--policy", "topic_bound", "--json").stdout,
    );
    expect(policy.map((f: { key: string }) => f.key)).toEqual(["runner.host"]);
  });
});

describe("agentstate memory recall", () => {
  it("prints the active topic, its open loops and the facts to recall", () => {
    const { home, sessionId } = seed();
    const text = run(home, "recall", "--agent", "main", "--session", sessionId);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toBe(
      [
        "## Topic: March invoices (open)",
        "Open loops:",
        "- ask Dana for the Acme invoice",
        "- send totals to accounting",
        "Labels: billing",
        "",
        "## Facts",
        "- [background] name: Dana",
        "- [account] openai.api_key: secret kept at env:OPENAI_API_KEY (reference only; the value is not inlined)",
        "",
      ].join("\n"),
    );
    const deploy = run(
      home,
      "recall",
      "--agent",
      "main",
      "--session",
      sessionId,
      "--topic",
      "deploy",
    );
    expect(deploy.stdout).toContain("Summary: Runner picked; secrets not wired");
    expect(deploy.stdout).toContain("- [environment] runner.host: build-02.internal");
    const none = JSON.parse(
      run(
        home,
        "recall",
        "--agent",
        "main",
        "--session",
        sessionId,
        "--no-topic",
        "--query",
        "coffee",
        "--json",
      ).stdout,
    );
    expect(none.topic).toBeNull();
    expect(none.facts.map((f: { key: string; reason: string }) => [f.key, f.reason])).toEqual([
      ["name", "always"],
      ["openai.api_key", "always"],
      ["coffee", "query"],
    ]);
  });

  it("never prints a secret value, whatever the flags", () => {
    const { home, sessionId } = seed();
    const outputs = [
      run(home, "facts", "--agent", "main"),
      run(home, "facts", "--agent", "main", "--json", "--include-sensitive"),
      run(home, "facts", "--agent", "main", "--sensitivity", "secret_ref", "--json"),
    ];
    for (const query of [LEAKED, "stripe key", `is it ${LEAKED}`]) {
      for (const extra of [
        [],
        ["--json"],
        ["--include-sensitive"],
        ["--include-sensitive", "--json"],
      ]) {
        const result = run(
          home,
          "recall",
          "--agent",
          "main",
          "--session",
          sessionId,
          "--query",
          query,
          ...extra,
        );
        expect(result.status, result.stderr).toBe(0);
        outputs.push(result);
      }
    }
    const stripe = JSON.parse(
      run(home, "recall", "--agent", "main", "--session", sessionId, "--query", "stripe", "--json")
        .stdout,
    );
    expect(stripe.facts.find((f: { key: string }) => f.key === "stripe.key")).toMatchObject({
      value: null,
      reference: null,
    });
    for (const output of outputs) {
      expect(output.stdout).not.toContain(LEAKED.slice(3));
      expect(output.stderr).not.toContain(LEAKED.slice(3));
    }
  });
});

describe("agentstate memory errors", () => {
  it("exits 3 for an unknown agent or session, 2 for a bad flag, and creates nothing", () => {
    const { home, sessionId } = seed();
    for (const args of [
      ["topics", "--agent", "ghost"],
      ["facts", "--agent", "ghost"],
      ["recall", "--agent", "ghost", "--session", sessionId],
    ]) {
      const result = run(home, ...args);
      expect(result.status, args.join(" ")).toBe(3);
      expect(result.stderr).toContain('"ghost"');
    }
    expect(existsSync(join(home, "agents", "ghost"))).toBe(false);
    for (const args of [
      ["recall", "--agent", "main", "--session", "no-such-session"],
      ["topics", "--agent", "main", "--session", "no-such-session"],
      ["recall", "--agent", "main", "--session", sessionId, "--topic", "no-such-topic"],
    ]) {
      const result = run(home, ...args);
      expect(result.status, args.join(" ")).toBe(3);
      expect(result.stderr).toMatch(/no-such-(session|topic)/);
    }
    const json = run(home, "recall", "--agent", "main", "--session", "nope", "--json");
    expect(JSON.parse(json.stderr).error).toMatchObject({ code: "E_NOT_FOUND" });
    for (const args of [
      ["facts", "--agent", "main", "--category", "hobby"],
      ["topics", "--agent", "main", "--status", "done"],
      ["facts", "--agent", "main", "--limit", "0"],
    ]) {
      const result = run(home, ...args);
      expect(result.status, args.join(" ")).toBe(2);
    }
    expect(run(home, "recall", "--agent", "main").status).not.toBe(0);
  });
});
