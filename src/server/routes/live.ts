import { Hono } from "hono";
import type { ServerDeps } from "../deps.js";
import { badRequest } from "../errors.js";
import { agentId, integer, params, query, sessionId, z } from "../validation.js";

/** Events per SSE message; a longer backlog goes out as several messages back to back. */
const BATCH = 200;
const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/** Where a reconnecting EventSource left off: its Last-Event-ID, else the query's afterSeq. */
function resumeSeq(header: string | undefined, fromQuery: number | undefined): number {
  if (header === undefined) return fromQuery ?? 0;
  const seq = Number(header);
  if (!/^\d{1,16}$/.test(header) || !Number.isSafeInteger(seq)) {
    throw badRequest("Last-Event-ID must be the seq of the last event received");
  }
  return seq;
}

/**
 * Live updates over Server-Sent Events. Per agent: `change` whenever its database changed (the
 * session list refreshes). Per session: `append` with the events after the client's seq, as
 * they are committed by any process, and `session` with the session's new tail.
 */
export function liveRoutes({ home, live }: ServerDeps): Hono {
  return new Hono()
    .get("/agents/:agentId/stream", (c) => {
      const { agentId: id } = params(c, z.object({ agentId }));
      query(c, z.strictObject({}));
      home.agent(id, { create: false });
      let first = true;
      return live.stream(c, id, {
        async send(stream) {
          // The first round only opens the stream: nothing has changed yet.
          if (!first)
            await stream.writeSSE({
              event: "change",
              data: JSON.stringify({ agentId: id, at: Date.now() }),
            });
          first = false;
          return false;
        },
      });
    })
    .get("/agents/:agentId/transcripts/:sessionId/stream", (c) => {
      const ids = params(c, z.object({ agentId, sessionId }));
      const { afterSeq } = query(c, z.strictObject({ afterSeq: integer(0, MAX_SEQ).optional() }));
      let last = resumeSeq(c.req.header("last-event-id"), afterSeq);
      let session = home.agent(ids.agentId, { create: false }).lifecycle.get(ids.sessionId);
      return live.stream(c, ids.agentId, {
        // Each round is one short read (a statement, no transaction) before any await: a read
        // transaction held across the stream's writes would keep checkpoints from restarting
        // the WAL for as long as a dashboard stays open (docs/operations.md).
        async send(stream) {
          // Looked up each round, not kept: the stream outlives any one handle the pool gives out
          // (the agent stays open while watched, since the change hub pins it).
          const agent = home.agent(ids.agentId, { create: false });
          const events = agent.transcripts.read(ids.sessionId, { afterSeq: last, limit: BATCH });
          const tail = agent.lifecycle.get(ids.sessionId);
          if (events.length > 0) {
            last = events.at(-1)?.seq ?? last;
            await stream.writeSSE({
              event: "append",
              id: String(last),
              data: JSON.stringify({ events }),
            });
          }
          if (tail.eventCount !== session.eventCount || tail.leafEventId !== session.leafEventId) {
            session = tail;
            await stream.writeSSE({ event: "session", data: JSON.stringify({ session }) });
          }
          return events.length === BATCH;
        },
      });
    });
}
