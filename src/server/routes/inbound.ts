import { Hono } from "hono";
import { INPUT_STATES } from "../../stores/agent/input-rows.js";
import { DELIVERY_STATUSES } from "../../stores/global/delivery-queue-rows.js";
import type { ServerDeps } from "../deps.js";
import { agentId, integer, params, query, sessionKey, text, z } from "../validation.js";

const keyParams = z.object({ agentId, key: sessionKey });
const inputsQuery = z.strictObject({
  state: z.enum(INPUT_STATES).optional(),
  afterSeq: integer(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: integer(1, 1000).optional(),
});
const deliveriesQuery = z.strictObject({
  status: z.enum(DELIVERY_STATUSES).optional(),
  queue: text.pipe(z.string().min(1).max(128)).optional(),
  limit: integer(1, 1000).optional(),
});

/**
 * A session key's inbound inputs and its delivery receipts, as the gateway's recover and
 * reconcile would find them: a crashed turn's inputs read as interrupted, a send cut off as
 * unknown. Reads only, also on a server started with --write.
 */
export function inboundRoutes({ home }: ServerDeps): Hono {
  return new Hono()
    .get("/agents/:agentId/sessions/:key/inputs", (c) => {
      const { agentId, key } = params(c, keyParams);
      const { limit = 100, ...filters } = query(c, inputsQuery);
      const inputs = home.inputs.listAsRecovered(agentId, { ...filters, sessionKey: key, limit });
      return c.json({ inputs });
    })
    .get("/agents/:agentId/sessions/:key/deliveries", (c) => {
      const { agentId, key } = params(c, keyParams);
      const { limit = 100, ...filters } = query(c, deliveriesQuery);
      // The agent must exist, as for every route under it; receipts are keyed by session key.
      home.agent(agentId, { create: false });
      const deliveries = home.queue.receipts({ ...filters, sessionKey: key, limit });
      return c.json({ deliveries });
    });
}
