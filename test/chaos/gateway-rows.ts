import { join } from "node:path";
import { openDatabase } from "../../src/db/database.js";

export interface InputRow {
  input_id: string;
  idempotency_key: string;
  state: string;
  outcome: { sessionId: string | null; eventIds: string[]; deliveryIds: string[] } | null;
}

export interface EventRow {
  session_id: string;
  event_id: string;
  role: string | null;
  text: string | null;
}

export interface DeliveryRow {
  id: string;
  status: string;
  idempotency_key: string | null;
  platform_message_id: string | null;
}

export interface GatewayRows {
  inputs: InputRow[];
  events: EventRow[];
  deliveries: DeliveryRow[];
  /** The gateway's recorded decisions about its sends of unknown outcome, by delivery id. */
  unknownDecisions: Map<string, unknown[]>;
}

/**
 * What the gateway left on disk, read straight from the two SQLite files (through the read view
 * for transcripts), not through the stores the gateway wrote with.
 */
export function readGatewayRows(home: string): GatewayRows {
  const agent = openDatabase({
    path: join(home, "agents/main/agent/agent.sqlite"),
    role: "agent",
    readonly: true,
  });
  const global = openDatabase({
    path: join(home, "state/state.sqlite"),
    role: "global",
    readonly: true,
  });
  try {
    const inputs = agent
      .prepare<Omit<InputRow, "outcome"> & { outcome_json: string | null }>(
        "SELECT input_id, idempotency_key, state, outcome_json FROM inputs ORDER BY arrival_seq",
      )
      .all()
      .map(({ outcome_json, ...row }) => ({
        ...row,
        outcome: outcome_json === null ? null : JSON.parse(outcome_json),
      }));
    const events = agent
      .prepare<EventRow>(
        `SELECT session_id, event_id, json_extract(event_json, '$.message.role') AS role,
           json_extract(event_json, '$.message.content[0].text') AS text
         FROM agentstate_events_v1`,
      )
      .all();
    const deliveries = global
      .prepare<DeliveryRow>(
        `SELECT id, status, idempotency_key, platform_message_id FROM delivery_queue_entries
         WHERE queue_name = 'outbound-delivery'`,
      )
      .all();
    const decisions = global
      .prepare<{ key: string; value_json: string }>(
        "SELECT key, value_json FROM kv WHERE scope = 'gateway-loop' AND key LIKE 'unknown:%'",
      )
      .all();
    const unknownDecisions = new Map<string, unknown[]>();
    for (const row of decisions) {
      const deliveryId = row.key.slice("unknown:".length, row.key.lastIndexOf("@"));
      const { decision } = JSON.parse(row.value_json) as { decision: unknown };
      unknownDecisions.set(deliveryId, [...(unknownDecisions.get(deliveryId) ?? []), decision]);
    }
    return { inputs, events, deliveries, unknownDecisions };
  } finally {
    agent.close();
    global.close();
  }
}
