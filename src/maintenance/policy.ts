import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { z as Zod } from "zod";
import { StateError } from "../db/errors.js";
import { lazyRequire } from "../lazy-require.js";
import type { RetentionOptions } from "../stores/retention.js";

/** The home's configuration file: written by the operator, never by agentstate. */
export const CONFIG_FILE = "agentstate.json";

export type MaintenanceMode = "enforce" | "warn";

/** What decides, per agent, which sessions go cold or are pruned. `null`: that rule is off. */
export interface MaintenanceRules {
  mode: MaintenanceMode;
  /** Hot sessions idle this many days move to cold storage. */
  coldAfterDays: number | null;
  /** Archived or reset (ended) sessions idle this many days are deleted. */
  pruneAfterDays: number | null;
  /** The N most recent sessions of each session key are never pruned. */
  keepRecent: number | null;
  /** Byte budget: above it, maintenance works down to `highWaterBytes`. */
  maxDiskBytes: number | null;
  /** Default: 80% of `maxDiskBytes`. */
  highWaterBytes: number | null;
}

export type RuleKey = keyof MaintenanceRules;

/** Where one rule's value came from: "default", "agentstate.json", "agentstate.json agents.<id>" or a flag. */
export type RuleSources = Record<RuleKey, string>;

export interface EffectiveRules extends MaintenanceRules {
  sources: RuleSources;
}

/** The home's policy: the file's rules (or the safe defaults) and their per-agent overrides. */
export interface MaintenancePolicy {
  /** The configuration file's path, and whether it exists. */
  file: string;
  fileFound: boolean;
  home: EffectiveRules;
  agents: Readonly<Record<string, EffectiveRules>>;
}

/**
 * One run's overrides (the CLI's flags): they win over the file, for every agent; a budget given
 * here is the home's (an agent's own budget stays the file's).
 */
export type MaintenanceOverrides = Partial<MaintenanceRules>;

/** Absent file, absent key: nothing is moved and nothing deleted. */
export const SAFE_DEFAULTS: Readonly<MaintenanceRules> = Object.freeze({
  mode: "enforce",
  coldAfterDays: null,
  pruneAfterDays: null,
  keepRecent: null,
  maxDiskBytes: null,
  highWaterBytes: null,
});

const RULE_KEYS = Object.keys(SAFE_DEFAULTS) as RuleKey[];

// zod loads when a home has a configuration file to check, not with the library (see
// lazyRequire): it is about a quarter of what `import("agentstate")` costs.
const zod = lazyRequire<typeof import("zod")>("zod");

function configSchemaOf(z: typeof Zod) {
  const days = z.number().nonnegative().nullable().optional();
  const count = z.number().int().nonnegative().nullable().optional();
  const rules = {
    mode: z.enum(["enforce", "warn"]).optional(),
    coldAfterDays: days,
    pruneAfterDays: days,
    keepRecent: count,
    maxDiskBytes: count,
    highWaterBytes: count,
  };
  const wholeDays = z.number().int().nonnegative().optional();
  return z.strictObject({
    maintenance: z
      .strictObject({
        ...rules,
        agents: z.record(z.string(), z.strictObject(rules)).optional(),
      })
      .optional(),
    retention: z
      .strictObject({
        inputsMaxAgeDays: wholeDays,
        inputsPerSession: count,
        receiptsMaxAgeDays: wholeDays,
        receiptsPerQueue: count,
      })
      .optional(),
    // A cluster host's settings: checked where they are used (src/cluster/cluster-config.ts).
    cluster: z.unknown().optional(),
  });
}

type ConfigSchema = ReturnType<typeof configSchemaOf>;
type ConfigFile = Zod.infer<ConfigSchema>;
type FileRules = NonNullable<NonNullable<ConfigFile["maintenance"]>["agents"]>[string];
let configSchema: ConfigSchema | undefined;

function configError(file: string, path: string, message: string): StateError {
  return new StateError(
    "E_INVALID_ARGUMENT",
    `${file}: ${path === "" ? "" : `${path}: `}${message}`,
    {
      details: { file, path },
    },
  );
}

/** The file parsed and checked; each problem names the key path at fault. */
function readConfig(file: string): ConfigFile {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw configError(file, "", `not valid JSON (${(error as Error).message})`);
  }
  configSchema ??= configSchemaOf(zod().z);
  const parsed = configSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0] as Zod.core.$ZodIssue;
  const keys = issue.code === "unrecognized_keys" ? issue.keys : [];
  const path = [...issue.path, ...keys.slice(0, 1)].map(String).join(".");
  const what = issue.code === "unrecognized_keys" ? "unknown key" : issue.message;
  throw configError(file, path, what);
}

function layer(
  base: EffectiveRules,
  given: FileRules | MaintenanceOverrides | undefined,
  source: (key: RuleKey) => string,
): EffectiveRules {
  const out: EffectiveRules = { ...base, sources: { ...base.sources } };
  for (const key of RULE_KEYS) {
    const value = given?.[key];
    if (value === undefined) continue;
    (out as unknown as Record<string, unknown>)[key] = value;
    out.sources[key] = source(key);
  }
  return out;
}

const FLAGS: Record<RuleKey, string> = {
  mode: "--warn",
  coldAfterDays: "--cold-after",
  pruneAfterDays: "--prune-after",
  keepRecent: "--keep-recent",
  maxDiskBytes: "--budget",
  highWaterBytes: "--budget",
};

/**
 * The high-water mark: given, or 80% of the budget. A budget given for this run alone resets it,
 * so that a smaller `--budget` never keeps a file's higher mark.
 */
function settle(rules: EffectiveRules, where: string, file: string): EffectiveRules {
  if (rules.maxDiskBytes === null) return { ...rules, highWaterBytes: null };
  if (rules.highWaterBytes === null || rules.sources.maxDiskBytes === FLAGS.maxDiskBytes) {
    const highWaterBytes = Math.floor(rules.maxDiskBytes * 0.8);
    const source = `80% of maxDiskBytes`;
    return { ...rules, highWaterBytes, sources: { ...rules.sources, highWaterBytes: source } };
  }
  if (rules.highWaterBytes > rules.maxDiskBytes) {
    throw configError(file, `${where}highWaterBytes`, "must not exceed maxDiskBytes");
  }
  return rules;
}

/** The home's policy: `agentstate.json` in the home root over the safe defaults, then `overrides`. */
export function loadPolicy(
  homePath: string,
  overrides: MaintenanceOverrides = {},
): MaintenancePolicy {
  const file = join(homePath, CONFIG_FILE);
  const fileFound = existsSync(file);
  const config = fileFound ? readConfig(file) : {};
  const section = config.maintenance ?? {};
  const defaults: EffectiveRules = {
    ...SAFE_DEFAULTS,
    sources: Object.fromEntries(RULE_KEYS.map((k) => [k, "default"])) as RuleSources,
  };
  const fromFile = layer(defaults, section, () => CONFIG_FILE);
  const flags = (key: RuleKey) => FLAGS[key];
  const home = settle(layer(fromFile, overrides, flags), "maintenance.", file);
  const agents: Record<string, EffectiveRules> = {};
  for (const [agentId, given] of Object.entries(section.agents ?? {})) {
    const own = layer(fromFile, given, () => `${CONFIG_FILE} agents.${agentId}`);
    // An agent's budget is its own directory's: the home's does not carry down to it.
    const scoped =
      given.maxDiskBytes === undefined ? { ...own, maxDiskBytes: null, highWaterBytes: null } : own;
    const { maxDiskBytes: _home, highWaterBytes: _mark, ...forAgents } = overrides;
    agents[agentId] = settle(
      layer(scoped, forAgents, flags),
      `maintenance.agents.${agentId}.`,
      file,
    );
  }
  return Object.freeze({ file, fileFound, home, agents: Object.freeze(agents) });
}

/** The rules one agent runs under. */
export function rulesFor(policy: MaintenancePolicy, agentId: string): EffectiveRules {
  return policy.agents[agentId] ?? policy.home;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The retention of completed inputs and settled delivery receipts that `agentstate.json` sets
 * (its `retention` section, days turned into ms), for `checkRetention` over the defaults; empty
 * when the file or the section is absent.
 */
export function loadRetention(homePath: string): RetentionOptions {
  const file = join(homePath, CONFIG_FILE);
  if (!existsSync(file)) return {};
  const given = readConfig(file).retention ?? {};
  const out: RetentionOptions = {};
  if (given.inputsMaxAgeDays !== undefined) out.inputsMaxAgeMs = given.inputsMaxAgeDays * DAY_MS;
  if (given.receiptsMaxAgeDays !== undefined) {
    out.receiptsMaxAgeMs = given.receiptsMaxAgeDays * DAY_MS;
  }
  if (typeof given.inputsPerSession === "number") out.inputsPerSession = given.inputsPerSession;
  if (typeof given.receiptsPerQueue === "number") out.receiptsPerQueue = given.receiptsPerQueue;
  return out;
}
