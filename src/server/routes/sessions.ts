import { Hono } from "hono";
import { StateError } from "../../db/errors.js";
import type { SessionSortKey } from "../../stores/agent/session-query.js";
import {
  type SessionEntryData,
  STORE_OWNED_ENTRY_FIELDS,
} from "../../stores/agent/session-store.js";
import type { ServerDeps } from "../deps.js";
import { summarizeEntry } from "../session-summary.js";
import {
  agentId,
  body,
  flag,
  integer,
  params,
  query,
  sessionKey,
  text,
  time,
  z,
} from "../validation.js";

const agentParams = z.object({ agentId });
const keyParams = z.object({ agentId, key: sessionKey });
const listQuery = z.strictObject({
  prefix: text.optional(),
  updatedSince: time.optional(),
  conversationId: text.optional(),
  status: text.optional(),
  label: text.optional(),
  channel: text.optional(),
  model: text.optional(),
  parentSessionKey: text.optional(),
  archived: flag.optional(),
  pinned: flag.optional(),
  // Checked by the store, so an unknown key is the same E_INVALID_ARGUMENT as in the library.
  sort: z.string().max(64).optional(),
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
      const { sort, ...rest } = filters;
      const page = agent.sessions.list({
        ...rest,
        sort: sort as SessionSortKey | undefined,
        limit,
      });
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
