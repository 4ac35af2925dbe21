// Two homes holding the same transcripts: one written by the schema-6 release and upgraded, one
// appended through today's API. Both are closed when returned, as a tool outside finds them.
import { join } from "node:path";
import { openStateHome } from "../../src/home.js";
import type { TranscriptEvent } from "../../src/transcript/event.js";
import { AGENT } from "../upgrade/assert-upgraded.js";
import { ALPHA, buildSchema6Agent, type Schema6Fixture } from "../upgrade/rich-agent.js";

export const agentDb = (home: string) => join(home, "agents", AGENT, "agent", "agent.sqlite");

/** A word in every kind of session, so a search leaves nothing pending behind the watermark. */
function indexEverything(home: string): void {
  const state = openStateHome({ home });
  try {
    state.agent(AGENT).search.search("kubernetes");
  } finally {
    state.close();
  }
}

export function upgradedHome(home: string): Schema6Fixture {
  openStateHome({ home }).close();
  const fixture = buildSchema6Agent(agentDb(home));
  indexEverything(home);
  return fixture;
}

/** The fixture's events appended through the API, in the order the schema-6 writer stored them. */
export function freshHome(home: string, fixture: Schema6Fixture): void {
  const keys = new Map(fixture.keys.map((k) => [`${k.sessionId}/${k.eventId}`, k.key]));
  const state = openStateHome({ home });
  try {
    const transcripts = state.agent(AGENT).transcripts;
    for (const [sessionId, text] of fixture.lines) {
      for (const line of text.split("\n").filter((l) => l !== "")) {
        const event = JSON.parse(line) as TranscriptEvent;
        const key = keys.get(`${sessionId}/${event.id}`);
        transcripts.append(sessionId, event, {
          verbatim: true,
          sessionKey: `agent:main:${sessionId}`,
          ...(key === undefined ? {} : { idempotencyKey: key }),
        });
      }
    }
    state.agent(AGENT).branches.branch(ALPHA, "a2");
  } finally {
    state.close();
  }
  indexEverything(home);
}
