import { Hono } from "hono";
import {
  FACT_CATEGORIES,
  FACT_SENSITIVITIES,
  RECALL_POLICIES,
  TOPIC_STATUSES,
} from "../../memory/taxonomy.js";
import type { Fact } from "../../memory/types.js";
import type { ServerDeps } from "../deps.js";
import { agentId, flag, integer, params, query, sessionId, text, z } from "../validation.js";

const agentParams = z.object({ agentId });
const topicsQuery = z.strictObject({
  sessionId: sessionId.optional(),
  status: z.enum(TOPIC_STATUSES).optional(),
  limit: integer(1, 1000).optional(),
});
const factsQuery = z.strictObject({
  scope: text.optional(),
  category: z.enum(FACT_CATEGORIES).optional(),
  sensitivity: z.enum(FACT_SENSITIVITIES).optional(),
  recallPolicy: z.enum(RECALL_POLICIES).optional(),
  includeSensitive: flag.optional(),
  limit: integer(1, 1000).optional(),
});

export type ShownFact = Fact & { redacted: boolean };

/**
 * A fact as the API shows it. A secret_ref's value never leaves the server (the store already
 * withholds it; this does not rely on that): only its reference, where the secret lives. A
 * sensitive value only when asked for, as the CLI's `--include-sensitive`.
 */
export function showFact(fact: Fact, includeSensitive: boolean): ShownFact {
  const withheld =
    fact.sensitivity === "secret_ref" || (fact.sensitivity === "sensitive" && !includeSensitive);
  return withheld ? { ...fact, value: null, redacted: true } : { ...fact, redacted: false };
}

/** An agent's memory: topics (per session or most recently active) and facts. */
export function memoryRoutes({ home }: ServerDeps): Hono {
  return new Hono()
    .get("/agents/:agentId/memory/topics", (c) => {
      const { agentId } = params(c, agentParams);
      const { sessionId, status, limit = 100 } = query(c, topicsQuery);
      const { memory, lifecycle } = home.agent(agentId, { create: false });
      // An unknown session is a 404, not an empty list that looks like a session without topics.
      if (sessionId !== undefined) lifecycle.get(sessionId);
      const options = { status, limit };
      const topics =
        sessionId === undefined
          ? memory.topics.listRecent(options)
          : memory.topics.list(sessionId, options);
      const active = new Map<string, string | null>();
      for (const topic of topics) {
        if (!active.has(topic.sessionId)) {
          active.set(topic.sessionId, memory.state.resolve(topic.sessionId)?.activeTopicId ?? null);
        }
      }
      return c.json({
        topics: topics.map((t) => ({ ...t, active: active.get(t.sessionId) === t.topicId })),
      });
    })
    .get("/agents/:agentId/memory/facts", (c) => {
      const { agentId } = params(c, agentParams);
      const { includeSensitive = false, limit = 100, ...filters } = query(c, factsQuery);
      const { memory } = home.agent(agentId, { create: false });
      const facts = memory.facts.list({ ...filters, limit });
      return c.json({ facts: facts.map((fact) => showFact(fact, includeSensitive)) });
    });
}
