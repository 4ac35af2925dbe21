import type { StateHome } from "../home.js";
import type { StorageCache } from "../status/storage-cache.js";
import type { LiveStreams } from "./sse.js";

/** What every route module is built from: the home it serves, live-update streams, kept storage. */
export interface ServerDeps {
  readonly home: StateHome;
  readonly live: LiveStreams;
  /** Each agent database's storage breakdown, measured off the request path and kept. */
  readonly storage: StorageCache;
}
