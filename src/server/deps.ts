import type { StateHome } from "../home.js";
import type { LiveStreams } from "./sse.js";

/** What every route module is built from: the home it serves and the live-update streams. */
export interface ServerDeps {
  readonly home: StateHome;
  readonly live: LiveStreams;
}
