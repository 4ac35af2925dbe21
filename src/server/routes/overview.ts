import { existsSync } from "node:fs";
import { Hono } from "hono";
import { readDamageMarker } from "../../db/damage-marker.js";
import { StateError } from "../../db/errors.js";
import type { AgentRecord } from "../../home.js";
import { cronActivity } from "../../status/cron-activity.js";
import { deliveryDepth } from "../../status/delivery-depth.js";
import { homeOverview } from "../../status/home-overview.js";
import { StorageCache } from "../../status/storage-cache.js";
import { STORAGE_FAMILIES, storageBreakdown } from "../../status/storage-families.js";
import type { ServerDeps } from "../deps.js";
import { agentId, integer, query, z } from "../validation.js";

const storageQuery = z.strictObject({ agent: agentId.optional() });
const cronQuery = z.strictObject({ days: integer(1, 366).optional() });
const noQuery = z.strictObject({});

/**
 * The home at a glance and the data behind the dashboard's charts. Every route only reads; token
 * usage and events per day are not here: they come from usage rollups, not from raw events.
 */
export function overviewRoutes({ home }: ServerDeps): Hono {
  const storage = new StorageCache();
  const storageOf = (agent: AgentRecord) => {
    // A missing or quarantined database is not opened: the overview says which and why.
    if (!existsSync(agent.dbPath) || readDamageMarker(agent.dbPath) !== null) {
      return { agentId: agent.agentId, storage: null };
    }
    const breakdown = storage.get(agent.dbPath, () =>
      home.withAgent(agent.agentId, ({ db }) => storageBreakdown(db), { create: false }),
    );
    return { agentId: agent.agentId, storage: breakdown };
  };
  return new Hono()
    .get("/overview", (c) => {
      query(c, noQuery);
      return c.json(homeOverview(home));
    })
    .get("/charts/storage", (c) => {
      const { agent } = query(c, storageQuery);
      const agents = home.listAgents().filter((a) => agent === undefined || a.agentId === agent);
      if (agent !== undefined && agents.length === 0) {
        throw new StateError("E_NOT_FOUND", `no agent ${agent} in this home`, {
          details: { agentId: agent },
        });
      }
      return c.json({ families: STORAGE_FAMILIES, agents: agents.map(storageOf) });
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
