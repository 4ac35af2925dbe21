import type { Command } from "commander";
import { StateError } from "../../db/errors.js";
import type { StateHome } from "../../home.js";
import type { JsonValue } from "../../stores/json.js";
import type { KvStore } from "../../stores/kv-store.js";
import {
  addHomeOption,
  addJsonOption,
  type HomeOptions,
  type JsonOption,
  parseInteger,
  withHome,
} from "../common.js";
import { printJson, renderTable } from "../output.js";

interface KvOptions extends HomeOptions, JsonOption {
  agent?: string;
}

function storeFor(home: StateHome, options: KvOptions, create: boolean): KvStore {
  return options.agent === undefined ? home.kv : home.agent(options.agent, { create }).kv;
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

  withKvOptions(kv.command("get <scope> <key>").description("print one value as JSON")).action(
    (scope: string, key: string, options: KvOptions) => {
      const entry = withHome(options, false, (home) =>
        storeFor(home, options, false).getEntry(scope, key),
      );
      if (!entry) {
        throw new StateError("E_NOT_FOUND", `no kv entry ${scope}/${key}`, {
          details: { scope, key },
        });
      }
      printJson(options.json ? entry : entry.value);
    },
  );

  withKvOptions(
    kv.command("set <scope> <key> <json>").description("store a JSON value (at most 64 KiB)"),
  ).action((scope: string, key: string, text: string, options: KvOptions) => {
    const value = parseValue(text);
    const entry = withHome(options, true, (home) =>
      storeFor(home, options, true).set(scope, key, value),
    );
    if (options.json) printJson(entry);
  });

  withKvOptions(kv.command("delete <scope> <key>").description("remove one entry")).action(
    (scope: string, key: string, options: KvOptions) => {
      const removed = withHome(options, false, (home) =>
        storeFor(home, options, false).delete(scope, key),
      );
      if (options.json) printJson({ removed });
      if (!removed) {
        throw new StateError("E_NOT_FOUND", `no kv entry ${scope}/${key}`, {
          details: { scope, key },
        });
      }
    },
  );

  withKvOptions(
    kv
      .command("list <scope>")
      .description("list the entries of a scope, ordered by key")
      .option("--prefix <text>", "only keys starting with this")
      .option("--after <key>", "only keys after this one (pagination)")
      .option("--limit <n>", "at most this many entries", "100"),
  ).action(
    (scope: string, options: KvOptions & { prefix?: string; after?: string; limit: string }) => {
      const limit = parseInteger("--limit", options.limit, 1, 10_000);
      const entries = withHome(options, false, (home) =>
        storeFor(home, options, false).list(scope, {
          prefix: options.prefix,
          after: options.after,
          limit,
        }),
      );
      if (options.json) {
        printJson(entries);
        return;
      }
      process.stdout.write(
        `${renderTable(entries, [
          { header: "KEY", value: (e) => e.key },
          { header: "UPDATED", value: (e) => new Date(e.updatedAt).toISOString() },
          { header: "VALUE", value: (e) => JSON.stringify(e.value).slice(0, 80) },
        ])}\n`,
      );
    },
  );
}
