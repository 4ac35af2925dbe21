import { Hono } from "hono";
import type { ServerDeps } from "../deps.js";
import { summarizeTree } from "../tree-summary.js";
import {
  agentId,
  body,
  eventId,
  integer,
  params,
  query,
  sessionId,
  sessionKey,
  z,
} from "../validation.js";

const MAX_SEQ = Number.MAX_SAFE_INTEGER;
const agentParams = z.object({ agentId });
const sessionParams = z.object({ agentId, sessionId });
const noQuery = z.strictObject({});
const pageQuery = z.strictObject({
  afterSeq: integer(0, MAX_SEQ).optional(),
  limit: integer(1, 1000).optional(),
});
const appendBody = z.strictObject({
  event: z.looseObject({
    type: z
      .string()
      .min(1)
      .max(64)
      .refine((t) => t !== "session", "a session header is written by the store, not appended"),
  }),
  idempotencyKey: z.string().min(1).max(256).optional(),
  sessionKey: sessionKey.optional(),
});
const labelBody = z.strictObject({
  targetId: eventId,
  label: z.string().max(256).nullable(),
});

/**
 * Transcripts by `{agentId, sessionId}`: sessions with a log, a session, a page of events, its
 * usage and cost by model, the tree.
 */
export function transcriptRoutes({ home, live }: ServerDeps): Hono {
  const agentOf = (id: string) => home.agent(id, { create: false });
  return new Hono()
    .get("/agents/:agentId/transcripts", (c) => {
      const { agentId } = params(c, agentParams);
      const { limit = 100 } = query(c, z.strictObject({ limit: integer(1, 1000).optional() }));
      return c.json({ sessions: agentOf(agentId).transcripts.listScopes(limit) });
    })
    .get("/agents/:agentId/transcripts/:sessionId", (c) => {
      const { agentId, sessionId } = params(c, sessionParams);
      query(c, noQuery);
      const agent = agentOf(agentId);
      const session = agent.lifecycle.get(sessionId);
      return c.json({ session, snapshots: agent.snapshots.list(sessionId) });
    })
    .get("/agents/:agentId/transcripts/:sessionId/events", (c) => {
      const { agentId, sessionId } = params(c, sessionParams);
      const { afterSeq = 0, limit = 100 } = query(c, pageQuery);
      const agent = agentOf(agentId);
      // Looked up first: a session that does not exist is a 404, not an empty page.
      const session = agent.lifecycle.get(sessionId);
      const events = agent.transcripts.read(sessionId, { afterSeq, limit });
      const last = events.at(-1)?.seq ?? afterSeq;
      const nextAfterSeq = last < session.eventCount ? last : null;
      return c.json({ session, events, nextAfterSeq });
    })
    .get("/agents/:agentId/transcripts/:sessionId/usage", (c) => {
      const { agentId, sessionId } = params(c, sessionParams);
      query(c, noQuery);
      return c.json(home.usage.session(agentId, sessionId));
    })
    .get("/agents/:agentId/transcripts/:sessionId/tree", (c) => {
      const { agentId, sessionId } = params(c, sessionParams);
      query(c, noQuery);
      return c.json(summarizeTree(agentOf(agentId), sessionId));
    })
    .post("/agents/:agentId/transcripts/:sessionId/events", async (c) => {
      const { agentId, sessionId } = params(c, sessionParams);
      const { event, ...options } = await body(c, appendBody);
      const stored = agentOf(agentId).transcripts.append(sessionId, event, options);
      live.hub.notify(agentId);
      return c.json(stored, stored.deduplicated ? 200 : 201);
    })
    .post("/agents/:agentId/transcripts/:sessionId/labels", async (c) => {
      const { agentId, sessionId } = params(c, sessionParams);
      const { targetId, label } = await body(c, labelBody);
      const stored = agentOf(agentId).branches.label(sessionId, targetId, label);
      live.hub.notify(agentId);
      return c.json(stored, 201);
    });
}
