import { existsSync } from "node:fs";
import { Hono } from "hono";
import { readDamageMarker } from "../../db/damage-marker.js";
import { StateError } from "../../db/errors.js";
import type { AgentRecord } from "../../home.js";
import { cronActivity } from "../../status/cron-activity.js";
import { deliveryDepth } from "../../status/delivery-depth.js";
import { homeOverview } from "../../status/home-overview.js";
import { STORAGE_FAMILIES } from "../../status/storage-families.js";
import type { ServerDeps } from "../deps.js";
import { agentId, integer, query, z } from "../validation.js";

const storageQuery = z.strictObject({ agent: agentId.optional() });
const cronQuery = z.strictObject({ days: integer(1, 366).optional() });
const noQuery = z.strictObject({});

/** A missing or quarantined database is not opened: the overview says which and why. */
export function isMeasurable(agent: AgentRecord): boolean {
  return existsSync(agent.dbPath) && readDamageMarker(agent.dbPath) === null;
}

/**
 * The home at a glance and the data behind the dashboard's charts. Every route only reads; token
 * usage and events per day are not here: they come from usage rollups, not from raw events.
 */
export function overviewRoutes({ home, storage }: ServerDeps): Hono {
  const storageOf = async (agent: AgentRecord) => {
    if (!isMeasurable(agent)) return { agentId: agent.agentId, storage: null };
    const { breakdown, measuredAt, stale } = await storage.get(agent.dbPath);
    return { agentId: agent.agentId, storage: breakdown, measuredAt, stale };
  };
  return new Hono()
    .get("/overview", (c) => {
      query(c, noQuery);
      return c.json(homeOverview(home));
    })
    .get("/charts/storage", async (c) => {
      const { agent } = query(c, storageQuery);
      const agents = home.listAgents().filter((a) => agent === undefined || a.agentId === agent);
      if (agent !== undefined && agents.length === 0) {
        throw new StateError("E_NOT_FOUND", `no agent ${agent} in this home`, {
          details: { agentId: agent },
        });
      }
      return c.json({
        families: STORAGE_FAMILIES,
        agents: await Promise.all(agents.map(storageOf)),
      });
    })
    .get("/charts/cron", (c) => {
      const { days = 30 } = query(c, cronQuery);
      return c.json(cronActivity(home.db, { days }));
    })
    .get("/charts/deliveries", (c) => {
      query(c, noQuery);
      return c.json({ queues: deliveryDepth(home.db) });
    });
}
