import { Hono } from "hono";
import { USAGE_GROUPINGS } from "../../api/usage-api.js";
import type { ServerDeps } from "../deps.js";
import { agentId, query, time, z } from "../validation.js";

const range = {
  agentId: agentId.optional(),
  since: time.optional(),
  until: time.optional(),
};
const usageQuery = z.strictObject({ ...range, by: z.enum(USAGE_GROUPINGS).optional() });
const eventsQuery = z.strictObject(range);

/**
 * Token usage, recorded cost and activity for the dashboard's charts, read from the agents' daily
 * rollups (never from the events): `since` / `until` select whole UTC days.
 */
export function usageRoutes({ home }: ServerDeps): Hono {
  return new Hono()
    .get("/usage", (c) => {
      const { by = "day", ...options } = query(c, usageQuery);
      return c.json(home.usage.query({ ...options, by }));
    })
    .get("/usage/events", (c) => {
      const options = query(c, eventsQuery);
      return c.json({ days: home.usage.eventsPerDay(options) });
    });
}
