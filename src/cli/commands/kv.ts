import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import type { StateHome } from "../../home.js";
import type { JsonValue } from "../../stores/json.js";
import type { KvEntry, KvStore } from "../../stores/kv-store.js";
import {
  addExamples,
  addHomeOption,
  addJsonOption,
  agentOf,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withHome,
  withReadHome,
} from "../common.js";
import { moreLine, printJson, renderTable, shellArg } from "../output.js";

interface KvOptions extends HomeOptions, JsonOption {
  agent?: string;
}

interface ListOptions extends KvOptions {
  prefix?: string;
  after?: string;
  limit: string;
  full?: boolean;
}

/** The global store, or the agent's; a read of an agent that is not there names those that are. */
function storeFor(home: StateHome, options: KvOptions, create: boolean): KvStore {
  if (options.agent === undefined) return home.kv;
  return create ? home.agent(options.agent, { create }).kv : agentOf(home, options.agent).kv;
}

function parseValue(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `value must be JSON (quote strings: '"text"'), got ${JSON.stringify(text.slice(0, 80))}`,
      { cause: error },
    );
  }
}

function withKvOptions(command: Command): Command {
  addHomeOption(command);
  addJsonOption(command);
  return command.option("--agent <id>", "use the agent's database instead of the global one");
}

export function registerKv(program: Command): void {
  const kv = program
    .command("kv")
    .description("read and write scoped key-value state (global, or one agent's with --agent)");
  addExamples(kv, [
    "agentstate kv get prefs theme",
    "agentstate kv set prefs theme '\"dark\"' --agent main",
    "agentstate kv list plugin.weather --prefix city:",
  ]);
  registerGet(kv);
  registerSet(kv);
  registerDelete(kv);
  registerList(kv);
}

function registerGet(kv: Command): void {
  const get = withKvOptions(kv.command("get <scope> <key>").description("print one value as JSON"));
  addExamples(get, [
    "agentstate kv get prefs theme",
    "agentstate kv get routing last-channel --agent main --json",
  ]);
  get.action((scope: string, key: string, options: KvOptions) => {
    const entry = withReadHome(options, (home) =>
      storeFor(home, options, false).getEntry(scope, key),
    );
    if (!entry) {
      throw new StateError("E_NOT_FOUND", `no kv entry ${scope}/${key}`, {
        details: { scope, key },
      });
    }
    printJson(options.json ? entry : entry.value);
  });
}

function registerSet(kv: Command): void {
  const set = withKvOptions(
    kv.command("set <scope> <key> <json>").description("store a JSON value (at most 64 KiB)"),
  );
  addExamples(set, [
    "agentstate kv set prefs theme '\"dark\"'",
    "agentstate kv set plugin.weather city:paris '{\"temp\":21}' --agent main",
    "agentstate kv set prefs retries 3 --json",
  ]);
  set.action((scope: string, key: string, text: string, options: KvOptions) => {
    const value = parseValue(text);
    const entry = withHome(options, true, (home) =>
      storeFor(home, options, true).set(scope, key, value),
    );
    if (options.json) printJson(entry);
  });
}

function registerDelete(kv: Command): void {
  const remove = withKvOptions(kv.command("delete <scope> <key>").description("remove one entry"));
  addExamples(remove, [
    "agentstate kv delete prefs theme",
    "agentstate kv delete plugin.weather city:paris --agent main --json",
  ]);
  remove.action((scope: string, key: string, options: KvOptions) => {
    const removed = withHome(options, false, (home) =>
      storeFor(home, options, false).delete(scope, key),
    );
    if (options.json) printJson({ removed });
    if (!removed) {
      throw new StateError("E_NOT_FOUND", `no kv entry ${scope}/${key}`, {
        details: { scope, key },
      });
    }
  });
}

function registerList(kv: Command): void {
  withKvOptions(
    kv
      .command("list <scope>")
      .description("list the entries of a scope, ordered by key")
      .option("--prefix <text>", "only keys starting with this")
      .option("--after <key>", "only keys after this one (the next page: see the more: line)")
      .option("--limit <n>", "at most this many entries (1 to 10000)", "100")
      .option("--full", "show values whole instead of cut to 80 characters with …")
      .addHelpText("after", LIST_EXAMPLES),
  ).action((scope: string, options: ListOptions) => {
    const limit = parseInteger("--limit", options.limit, 1, 10_000);
    const { entries, more } = withReadHome(options, (home) => {
      const store = storeFor(home, options, false);
      const entries = store.list(scope, { prefix: options.prefix, after: options.after, limit });
      const last = entries.at(-1);
      // One row past the page says whether another page exists, whatever the limit.
      const more =
        entries.length === limit &&
        last !== undefined &&
        store.list(scope, { prefix: options.prefix, after: last.key, limit: 1 }).length > 0;
      return { entries, more };
    });
    if (options.json) {
      printJson(entries);
      return;
    }
    process.stdout.write(
      entries.length === 0 ? "no entries\n" : `${renderEntries(entries, options)}\n`,
    );
    const last = entries.at(-1);
    if (more && last) process.stdout.write(moreLine(`--after ${shellArg(last.key)}`));
  });
}

const LIST_EXAMPLES = `
Examples:
  agentstate kv list plugin.weather --limit 50
  agentstate kv list plugin.weather --prefix city: --full
  agentstate kv list routing --agent main --after <the key after more:>

When more entries follow, the last line is \`more: --after <key>\`.`;

function renderEntries(entries: readonly KvEntry[], options: ListOptions): string {
  return renderTable(
    entries,
    [
      { header: "KEY", value: (e) => e.key },
      { header: "UPDATED", value: (e) => new Date(e.updatedAt).toISOString() },
      { header: "VALUE", value: (e) => JSON.stringify(e.value), max: 80 },
    ],
    { full: options.full === true },
  );
}
