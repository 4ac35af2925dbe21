import { Hono } from "hono";
import type { ServerDeps } from "../deps.js";
import { agentId, integer, query, sessionId, text, z } from "../validation.js";

const searchQuery = z.strictObject({
  q: text.refine((q) => q.trim() !== "", "must not be empty"),
  agentId: agentId.optional(),
  sessionId: sessionId.optional(),
  limit: integer(1, 500).optional(),
});

/**
 * Ranked full-text search over transcripts. The store reduces any query to quoted words before
 * it reaches FTS5 MATCH, so operators and quotes in `q` are only text.
 */
export function searchRoutes({ home }: ServerDeps): Hono {
  return new Hono().get("/search", (c) => {
    const { q, limit = 20, ...scope } = query(c, searchQuery);
    return c.json({ query: q, hits: home.transcripts.search(q, { ...scope, limit }) });
  });
}
