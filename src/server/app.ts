import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ClusterHome } from "../cluster/cluster-home.js";
import type { StateHome } from "../home.js";
import { StorageCache } from "../status/storage-cache.js";
import { StorageMeter } from "../status/storage-meter.js";
import { type AccessOptions, access } from "./auth.js";
import { ChangeHub, DEFAULT_POLL_MS } from "./change-hub.js";
import { durableRoutes, ownAgentFirst } from "./cluster-agents.js";
import type { ServerDeps } from "./deps.js";
import { ApiError, badRequest, onError } from "./errors.js";
import { agentRoutes } from "./routes/agents.js";
import { historyRoutes } from "./routes/history.js";
import { inboundRoutes } from "./routes/inbound.js";
import { liveRoutes } from "./routes/live.js";
import { memoryRoutes } from "./routes/memory.js";
import { isMeasurable, overviewRoutes } from "./routes/overview.js";
import { searchRoutes } from "./routes/search.js";
import { sessionRoutes } from "./routes/sessions.js";
import { statusRoutes } from "./routes/status.js";
import { transcriptRoutes } from "./routes/transcripts.js";
import { usageRoutes } from "./routes/usage.js";
import { LiveStreams } from "./sse.js";
import { staticRoutes, WEB_DIR } from "./static.js";

export interface AppOptions {
  home: StateHome;
  /** Required for every request when set (see `access`). */
  token?: string;
  /** Accept the write endpoints (default false: read-only). */
  write?: boolean;
  /** How often a watched agent database is checked for commits (default 250 ms). */
  pollMs?: number;
  /** Where the dashboard's files are (default: src/web or dist/web beside this module). */
  webDir?: string;
  /** Start measuring every agent database's storage at once, for the storage chart (default false). */
  warmStorage?: boolean;
}

export interface ServerApp {
  readonly app: Hono;
  /** Ends open live streams, stops polling and the storage thread; the home stays open (it is the caller's). */
  close(): void;
}

const MAX_BODY_BYTES = 1024 * 1024;

const SECURITY_HEADERS = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

/** Percent-escapes must decode to UTF-8 text: anything else is refused before routing. */
function checkUrlEncoding(url: string): void {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const pathAndQuery = start === -1 ? "" : url.slice(start);
  for (const part of pathAndQuery.split(/[/?&=]/)) {
    try {
      decodeURIComponent(part.replaceAll("+", " "));
    } catch {
      throw badRequest("the URL has malformed percent-encoding (not UTF-8)");
    }
  }
}

/**
 * The HTTP API under /api and the dashboard under /, over one open StateHome. Built without a
 * socket, so tests drive it with `app.request()`; `startServer` puts it on a port.
 */
export function createApp(options: AppOptions): ServerApp {
  const {
    home,
    token,
    write = false,
    pollMs = DEFAULT_POLL_MS,
    webDir = WEB_DIR,
    warmStorage = false,
  } = options;
  const live = new LiveStreams(new ChangeHub(home, pollMs));
  const meter = new StorageMeter();
  const storage = new StorageCache((path) => meter.measure(path));
  if (warmStorage)
    storage.warm(
      home
        .listAgents()
        .filter(isMeasurable)
        .map((a) => a.dbPath),
    );
  const deps: ServerDeps = { home, live, storage };
  const accessOptions: AccessOptions = { token, write };
  const api = new Hono()
    .use("*", async (c, next) => {
      c.header("Cache-Control", "no-store");
      await next();
    })
    .use(
      "*",
      bodyLimit({
        maxSize: MAX_BODY_BYTES,
        onError: () => {
          throw new ApiError(
            413,
            "E_TOO_LARGE",
            `the request body exceeds ${MAX_BODY_BYTES} bytes`,
          );
        },
      }),
    );
  if (home instanceof ClusterHome) {
    api.use("/agents/:agentId/*", ownAgentFirst(home)).route("/", durableRoutes(home));
  }
  api
    .route("/", agentRoutes(deps))
    .route("/", sessionRoutes(deps))
    .route("/", inboundRoutes(deps))
    .route("/", transcriptRoutes(deps))
    .route("/", liveRoutes(deps))
    .route("/", searchRoutes(deps))
    .route("/", memoryRoutes(deps))
    .route("/", historyRoutes(deps))
    .route("/", overviewRoutes(deps))
    .route("/", usageRoutes(deps))
    .route("/", statusRoutes(deps, { write }));
  const app = new Hono()
    .use("*", async (c, next) => {
      await next();
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.header(name, value);
    })
    .use("*", async (c, next) => {
      checkUrlEncoding(c.req.url);
      await next();
    })
    .use("*", access(accessOptions))
    .route("/api", api)
    .route("/", staticRoutes(webDir));
  app.notFound((c) => {
    const message = `no such endpoint: ${c.req.method} ${c.req.path.slice(0, 200)}`;
    return c.json({ error: { code: "E_NOT_FOUND", message, details: {} } }, 404);
  });
  app.onError(onError);
  return {
    app,
    close: () => {
      live.close();
      meter.close();
    },
  };
}
