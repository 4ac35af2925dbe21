import { Hono } from "hono";
import { StateError } from "../../db/errors.js";
import {
  type SessionEntryData,
  STORE_OWNED_ENTRY_FIELDS,
} from "../../stores/agent/session-store.js";
import type { ServerDeps } from "../deps.js";
import { summarizeEntry } from "../session-summary.js";
import { agentId, body, integer, params, query, sessionKey, text, time, z } from "../validation.js";

const agentParams = z.object({ agentId });
const keyParams = z.object({ agentId, key: sessionKey });
const listQuery = z.strictObject({
  prefix: text.optional(),
  updatedSince: time.optional(),
  conversationId: text.optional(),
  limit: integer(1, 1000).optional(),
  cursor: z.string().max(2048).optional(),
});
const patchBody = z.strictObject({
  fields: z.record(
    z
      .string()
      .min(1)
      .max(256)
      .refine((name) => !STORE_OWNED_ENTRY_FIELDS.includes(name), {
        error: (issue) =>
          `${String(issue.input)} is kept by agentstate (start, reset, compact or a run), not patched`,
      }),
    z.json(),
  ),
  expectedVersion: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
});

/** Session entries (routing keys): a filtered, paged list, one key's entry and history, patch. */
export function sessionRoutes({ home, live }: ServerDeps): Hono {
  return new Hono()
    .get("/agents/:agentId/sessions", (c) => {
      const { agentId } = params(c, agentParams);
      const { limit = 50, ...filters } = query(c, listQuery);
      const agent = home.agent(agentId, { create: false });
      const page = agent.sessions.list({ ...filters, limit });
      return c.json({
        entries: page.entries.map((entry) => summarizeEntry(agent, entry)),
        nextCursor: page.nextCursor,
      });
    })
    .get("/agents/:agentId/sessions/:key", (c) => {
      const { agentId, key } = params(c, keyParams);
      query(c, z.strictObject({}));
      const agent = home.agent(agentId, { create: false });
      const entry = agent.sessions.get(key) ?? null;
      const history = agent.lifecycle.list(key);
      if (entry === null && history.length === 0) {
        throw new StateError(
          "E_NOT_FOUND",
          `no session key ${JSON.stringify(key)} for agent ${agentId}`,
          {
            details: { agentId, sessionKey: key },
          },
        );
      }
      return c.json({ entry, history });
    })
    .patch("/agents/:agentId/sessions/:key", async (c) => {
      const { agentId, key } = params(c, keyParams);
      const { fields, expectedVersion } = await body(c, patchBody);
      const agent = home.agent(agentId, { create: false });
      const options = expectedVersion === undefined ? {} : { expectedVersion };
      const entry = agent.sessions.patch(key, fields as SessionEntryData, options);
      live.hub.notify(agentId);
      return c.json({ entry });
    });
}
