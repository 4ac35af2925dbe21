import type { Command } from "commander";
import type { AgentState } from "../../home.js";
import {
  checkEnum,
  FACT_CATEGORIES,
  FACT_SENSITIVITIES,
  RECALL_POLICIES,
  TOPIC_STATUSES,
} from "../../memory/taxonomy.js";
import type { Fact, Topic } from "../../memory/types.js";
import {
  addAgentOption,
  addExamples,
  addHomeOption,
  addJsonOption,
  agentOf,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withReadHome,
} from "../common.js";
import { fetchPage, largerLimit, moreLine, printJson, renderTable } from "../output.js";
import { sanitize } from "../render/style.js";

interface AgentOptions extends HomeOptions, JsonOption {
  agent?: string;
}

interface TopicsOptions extends AgentOptions {
  session?: string;
  status?: string;
  limit: string;
  full?: boolean;
}

interface FactsOptions extends AgentOptions {
  scope?: string;
  category?: string;
  sensitivity?: string;
  policy?: string;
  includeSensitive?: boolean;
  limit: string;
  full?: boolean;
}

interface RecallOptions extends AgentOptions {
  session: string;
  topic?: string | false;
  query?: string;
  scope?: string[];
  includeSensitive?: boolean;
}

/** Reads never create an agent: an unknown one is E_NOT_FOUND, not a new empty database. */
function readAgent<T>(options: AgentOptions, fn: (agent: AgentState) => T): T {
  return withReadHome(options, (home) => fn(agentOf(home, options.agent)));
}

function agentCommand(parent: Command, usage: string, description: string): Command {
  return addAgentOption(
    parent.command(usage).description(description),
    "the agent whose memory to read",
  );
}

function finish(command: Command): Command {
  addHomeOption(command);
  return addJsonOption(command);
}

// The stores' largest page; a list without a cursor shows more through a larger --limit.
const MAX_LIMIT = 10_000;

/** The rows, and a `more:` line when the list stopped at its limit. */
function printPage(text: string, more: boolean, limit: number): void {
  process.stdout.write(`${text}\n`);
  const flags = more ? largerLimit(limit, MAX_LIMIT) : null;
  if (flags !== null) process.stdout.write(moreLine(flags));
}

/** What the CLI shows of a fact's value: a secret_ref only as its reference. */
function shownValue(fact: Fact, includeSensitive: boolean): string {
  if (fact.sensitivity === "secret_ref") {
    return fact.reference === null ? "(secret: reference withheld)" : `→ ${fact.reference}`;
  }
  if (fact.sensitivity === "sensitive" && !includeSensitive) return "(sensitive: hidden)";
  return fact.value ?? "";
}

function renderTopics(topics: readonly (Topic & { active: boolean })[], full: boolean): string {
  return renderTable(
    topics,
    [
      { header: "", value: (t) => (t.active ? "*" : "") },
      { header: "TOPIC", value: (t) => t.topicId, max: 40 },
      { header: "SESSION", value: (t) => t.sessionId, max: 40 },
      { header: "STATUS", value: (t) => t.status },
      { header: "LAST ACTIVE", value: (t) => new Date(t.lastActiveAt).toISOString() },
      { header: "LOOPS", value: (t) => t.openLoops.length, align: "right" },
      { header: "LABELS", value: (t) => t.labels.join(",") || "-", max: 30 },
      { header: "TITLE", value: (t) => t.title, max: 50 },
    ],
    { full },
  );
}

function registerTopics(memory: Command): void {
  const command = agentCommand(
    memory,
    "topics",
    "list an agent's topics, most recently active first (* = its session's active topic)",
  )
    .option("--session <id>", "only this session's topics")
    .option("--status <status>", `only topics in this status (${TOPIC_STATUSES.join(", ")})`)
    .option("--limit <n>", "at most this many topics (1 to 10000)", "100")
    .option("--full", "show ids, labels and titles whole instead of cut with …")
    .addHelpText("after", TOPICS_EXAMPLES);
  finish(command).action((options: TopicsOptions) => {
    const status =
      options.status === undefined
        ? undefined
        : checkEnum("--status", options.status, TOPIC_STATUSES);
    const limit = parseInteger("--limit", options.limit, 1, MAX_LIMIT);
    const { rows: topics, more } = fetchPage(limit, MAX_LIMIT, (count) =>
      listTopics(options, { status, limit: count }),
    );
    if (options.json) printJson(topics);
    else if (topics.length === 0) process.stdout.write("no topics\n");
    else printPage(renderTopics(topics, options.full === true), more, limit);
  });
}

const TOPICS_EXAMPLES = `
Examples:
  agentstate memory topics
  agentstate memory topics --agent main --session <session-id> --status open --full`;

const FACTS_EXAMPLES = `
Examples:
  agentstate memory facts --scope user
  agentstate memory facts --agent main --category preference --full
  agentstate memory facts --agent main --sensitivity sensitive --include-sensitive`;

/** The topics of the session (or of every session, most recent first) with their active mark. */
function listTopics(
  options: TopicsOptions,
  query: { status?: Topic["status"]; limit: number },
): (Topic & { active: boolean })[] {
  return readAgent(options, ({ memory, lifecycle }) => {
    const { session } = options;
    // An unknown session is an error, not an empty list that looks like a session without topics.
    if (session !== undefined) lifecycle.get(session);
    const list =
      session === undefined ? memory.topics.listRecent(query) : memory.topics.list(session, query);
    const active = new Map<string, string | null>();
    for (const t of list) {
      if (!active.has(t.sessionId)) {
        active.set(t.sessionId, memory.state.resolve(t.sessionId)?.activeTopicId ?? null);
      }
    }
    return list.map((t) => ({ ...t, active: active.get(t.sessionId) === t.topicId }));
  });
}

function registerFacts(memory: Command): void {
  const command = agentCommand(
    memory,
    "facts",
    "list an agent's facts by scope and key; secret_ref facts show only where the secret lives",
  )
    .option("--scope <scope>", "only facts of this scope")
    .option("--category <category>", `only this category (${FACT_CATEGORIES.join(", ")})`)
    .option("--sensitivity <level>", `only this sensitivity (${FACT_SENSITIVITIES.join(", ")})`)
    .option("--policy <policy>", `only this recall policy (${RECALL_POLICIES.join(", ")})`)
    .option("--include-sensitive", "show the values of sensitive facts (hidden by default)")
    .option("--limit <n>", "at most this many facts (1 to 10000)", "100")
    .option("--full", "show scopes, keys and values whole instead of cut with …")
    .addHelpText("after", FACTS_EXAMPLES);
  finish(command).action((options: FactsOptions) => {
    const optional = <T extends string>(
      flag: string,
      value: string | undefined,
      values: readonly T[],
    ) => (value === undefined ? undefined : checkEnum(flag, value, values));
    const query = {
      scope: options.scope,
      category: optional("--category", options.category, FACT_CATEGORIES),
      sensitivity: optional("--sensitivity", options.sensitivity, FACT_SENSITIVITIES),
      recallPolicy: optional("--policy", options.policy, RECALL_POLICIES),
    };
    const limit = parseInteger("--limit", options.limit, 1, MAX_LIMIT);
    const show = options.includeSensitive === true;
    const page = fetchPage(limit, MAX_LIMIT, (count) =>
      readAgent(options, ({ memory }) => memory.facts.list({ ...query, limit: count })),
    );
    const facts = page.rows.map((fact) =>
      fact.sensitivity === "sensitive" && !show ? { ...fact, value: null } : fact,
    );
    if (options.json) {
      printJson(facts);
      return;
    }
    if (facts.length === 0) {
      process.stdout.write("no facts\n");
      return;
    }
    const table = renderTable(
      facts,
      [
        { header: "SCOPE", value: (f) => f.scope, max: 30 },
        { header: "KEY", value: (f) => f.key, max: 40 },
        { header: "CATEGORY", value: (f) => f.category },
        { header: "SENSITIVITY", value: (f) => f.sensitivity },
        { header: "RECALL", value: (f) => f.recallPolicy },
        { header: "CONF", value: (f) => f.confidence.toFixed(2), align: "right" },
        { header: "VALUE", value: (f) => shownValue(f, show), max: 60 },
      ],
      { full: options.full === true },
    );
    printPage(table, page.more, limit);
  });
}

function registerRecall(memory: Command): void {
  const command = agentCommand(
    memory,
    "recall",
    "print the prompt-ready memory of a session: its topic, always and topic facts, query hits",
  )
    .requiredOption("--session <id>", "the session to recall for")
    .option("--topic <id>", "recall for this topic instead of the session's active one")
    .option("--no-topic", "recall without a topic")
    .option("--query <text>", "also recall facts sharing a word with this text")
    .option("--scope <scope...>", "only facts of these scopes")
    .option("--include-sensitive", "include sensitive facts (never secret values)");
  addExamples(command, [
    "agentstate memory recall --session <session-id>",
    'agentstate memory recall --agent main --session <session-id> --query "shopping list"',
    "agentstate memory recall --session <session-id> --no-topic --scope user --json",
  ]);
  finish(command).action((options: RecallOptions) => {
    const result = readAgent(options, ({ memory }) =>
      memory.recall({
        sessionId: options.session,
        topicId: options.topic === false ? null : options.topic,
        query: options.query,
        scopes: options.scope,
        includeSensitive: options.includeSensitive === true,
      }),
    );
    if (options.json) printJson(result);
    else
      process.stdout.write(
        result.text === "" ? "nothing to recall\n" : `${sanitize(result.text)}\n`,
      );
  });
}

export function registerMemory(program: Command): void {
  const memory = program
    .command("memory")
    .description("inspect an agent's memory: topics, facts, and what a session recalls");
  addExamples(memory, [
    "agentstate memory topics --status open",
    "agentstate memory facts --agent main --scope user",
    "agentstate memory recall --session <session-id>",
  ]);
  registerTopics(memory);
  registerFacts(memory);
  registerRecall(memory);
}
