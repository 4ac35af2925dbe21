import type { Command } from "commander";
import type { StateHome } from "../../home.js";
import { checkEnum } from "../../memory/taxonomy.js";
import { INPUT_STATES, type InputState } from "../../stores/agent/input-rows.js";
import type { InputView } from "../../stores/agent/input-views.js";
import {
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

interface InputsOptions extends HomeOptions, JsonOption {
  agent?: string;
  sessionKey?: string;
  state?: string;
  limit: string;
  full?: boolean;
}

/** An input with the agent it belongs to: without `--agent` the list spans every agent. */
type AgentInput = InputView & { agentId: string };

const MAX_INPUTS = 10_000;

function time(ms: number): string {
  return new Date(ms).toISOString();
}

/** What a completed input was answered with: its transcript events, or why it was given up. */
function outcomeOf(input: InputView): string {
  const outcome = input.outcome;
  if (outcome === null) return "-";
  if (outcome.abandoned !== undefined) return `abandoned: ${outcome.abandoned}`;
  return outcome.eventIds.length === 0 ? "(no events)" : outcome.eventIds.join(",");
}

function stateOf(input: InputView): string {
  // Not recorded yet: recover records it; the mark tells the two apart.
  return input.state === input.storedState ? input.state : `${input.state}*`;
}

function render(inputs: readonly AgentInput[], full: boolean): string {
  return renderTable(
    inputs,
    [
      { header: "AGENT", value: (i) => sanitize(i.agentId) },
      { header: "INPUT", value: (i) => sanitize(i.inputId), max: 36 },
      { header: "SESSION KEY", value: (i) => sanitize(i.sessionKey), max: 40 },
      { header: "STATE", value: stateOf },
      { header: "RECEIVED", value: (i) => time(i.receivedAt) },
      { header: "ATTEMPTS", value: (i) => i.attempts, align: "right" },
      { header: "OWNER", value: (i) => sanitize(i.lease?.owner ?? "-"), max: 24 },
      { header: "OUTCOME", value: outcomeOf, max: 40 },
    ],
    { full },
  );
}

/** Each agent's inputs in arrival order, the agents by id, `count` in all at most. */
function listInputs(home: StateHome, options: InputsOptions, state: InputState | undefined) {
  return (count: number): AgentInput[] => {
    const agents =
      options.agent === undefined
        ? home.listAgents().map((a) => a.agentId)
        : [agentOf(home, options.agent).agentId];
    const out: AgentInput[] = [];
    for (const agentId of agents) {
      const query = { state, sessionKey: options.sessionKey, limit: count - out.length };
      for (const input of home.inputs.listAsRecovered(agentId, query)) {
        out.push({ ...input, agentId });
      }
      if (out.length >= count) break;
    }
    return out;
  };
}

const HELP = `
An input whose lease lapsed while its owner process is gone shows as interrupted* (JSON:
"state": "interrupted", "storedState": "claimed") until the gateway's recover records it; this
command only reads and records nothing.

Examples:
  agentstate inputs --state interrupted
  agentstate inputs --agent main --session-key agent:main:main --limit 20
  agentstate inputs --state accepted --json

When more inputs follow, the last line is \`more: --limit <n>\`.`;

export function registerInputs(program: Command): void {
  const command = program
    .command("inputs")
    .description("list accepted messages (inputs) and what became of them, in arrival order")
    .option("--agent <id>", "only this agent (default: every agent, by id)")
    .option("--session-key <key>", "only the inputs of this session key")
    .option("--state <state>", `only inputs in this state: ${INPUT_STATES.join(", ")}`)
    .option("--limit <n>", `at most this many inputs (1 to ${MAX_INPUTS})`, "100")
    .option("--full", "show ids, keys and outcomes whole instead of cut with …")
    .addHelpText("after", HELP);
  addHomeOption(command);
  addJsonOption(command);
  command.action((options: InputsOptions) => {
    const state =
      options.state === undefined ? undefined : checkEnum("--state", options.state, INPUT_STATES);
    const limit = parseInteger("--limit", options.limit, 1, MAX_INPUTS);
    const { rows, more } = withReadHome(options, (home) =>
      fetchPage(limit, MAX_INPUTS, listInputs(home, options, state)),
    );
    if (options.json) {
      printJson(rows);
      return;
    }
    process.stdout.write(
      rows.length === 0 ? "no inputs\n" : `${render(rows, options.full === true)}\n`,
    );
    if (rows.some((i) => i.state !== i.storedState)) {
      process.stdout.write("* lease lapsed, owner process gone: not yet recorded by recover\n");
    }
    const flags = more ? largerLimit(limit, MAX_INPUTS) : null;
    if (flags !== null) process.stdout.write(moreLine(flags));
  });
}
