import type { SessionUsageReport } from "../../api/usage-api.js";
import { isStateError, StateError } from "../../db/errors.js";
import type { AgentState, StateHome } from "../../home.js";
import { agentOf } from "../common.js";
import { printJson } from "../output.js";
import { sanitize } from "../render/style.js";
import { modelName, renderUsageTable } from "./usage-table.js";

/**
 * The session `given` names: a session id, else a session key's current session. An id is tried
 * first: keys and ids are told apart by what exists, not by their shape.
 */
function sessionIdOf(agent: AgentState, given: string): string {
  try {
    return agent.lifecycle.get(given).sessionId;
  } catch (error) {
    if (!isStateError(error, "E_NOT_FOUND")) throw error;
  }
  const sessionId = agent.sessions.get(given)?.entry.sessionId;
  if (typeof sessionId === "string") return sessionId;
  throw new StateError(
    "E_NOT_FOUND",
    `no session or session key ${JSON.stringify(given)} for agent ${agent.agentId}`,
    { details: { agentId: agent.agentId, session: given } },
  );
}

/** One session's usage by model: `agentstate usage --session KEY|ID`. */
export function sessionUsage(
  home: StateHome,
  agentId: string | undefined,
  given: string,
): SessionUsageReport {
  const agent = agentOf(home, agentId);
  return home.usage.session(agent.agentId, sessionIdOf(agent, given));
}

function render(report: SessionUsageReport): string {
  const rows = [
    ...report.models.map((m) => ({ key: modelName(m.provider, m.model), g: m })),
    { key: "TOTAL", g: report.totals },
  ];
  return renderUsageTable("MODEL", rows, { totalTokens: true });
}

/** Prints the report: a heading naming the session, the table, and what the cost leaves out. */
export function printSessionUsage(report: SessionUsageReport, json: boolean | undefined): void {
  if (json) {
    printJson(report);
    return;
  }
  const key = report.sessionKey === null ? "" : `  key ${sanitize(report.sessionKey)}`;
  const where = report.cold ? "  (cold: read from its archive)" : "";
  process.stdout.write(`session ${sanitize(report.sessionId)}${key}${where}\n`);
  if (report.models.length === 0) {
    process.stdout.write("no events\n");
    return;
  }
  const { messages, pricedMessages } = report.totals;
  const note =
    messages === pricedMessages
      ? ""
      : `cost: the costs messages recorded; ${messages - pricedMessages} of ${messages} assistant messages recorded none (no price is estimated)\n`;
  process.stdout.write(`${render(report)}\n${note}`);
}
