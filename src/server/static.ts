import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Context, Hono } from "hono";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** The dashboard's files: src/web beside src/server, or dist/web (copied by the build) beside dist/server. */
export const WEB_DIR = fileURLToPath(new URL("../web/", import.meta.url));

interface Asset {
  body: string;
  type: string;
}

/**
 * Read once, by name, from a flat directory: a request can only name a file that was listed at
 * start, so no path in a URL ever reaches the file system.
 */
function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type !== undefined) assets.set(name, { body: readFileSync(join(dir, name), "utf8"), type });
  }
  if (!assets.has("index.html"))
    throw new Error(`the dashboard is missing: no index.html in ${dir}`);
  return assets;
}

/**
 * Third-party files the dashboard uses, served from the installed package (no CDN: the
 * dashboard works offline), by a fixed name each.
 */
const VENDOR: Readonly<Record<string, { module: string; type: string }>> = {
  "uplot.js": { module: "uplot/dist/uPlot.iife.min.js", type: TYPES[".js"] as string },
  "uplot.css": { module: "uplot/dist/uPlot.min.css", type: TYPES[".css"] as string },
};

function loadVendor(): Map<string, Asset> {
  const require = createRequire(import.meta.url);
  const assets = new Map<string, Asset>();
  for (const [name, { module, type }] of Object.entries(VENDOR)) {
    assets.set(name, { body: readFileSync(require.resolve(module), "utf8"), type });
  }
  return assets;
}

/** The dashboard: `/` is the app (it routes with the URL fragment), other names its assets. */
export function staticRoutes(dir = WEB_DIR): Hono {
  const assets = loadAssets(dir);
  const vendor = loadVendor();
  const serve = (c: Context, asset: Asset | undefined) => {
    if (asset === undefined) return c.notFound();
    // Revalidated each time: an upgraded package must not run with a stale app.js.
    c.header("Cache-Control", "no-cache");
    return c.body(asset.body, 200, { "Content-Type": asset.type });
  };
  return new Hono()
    .get("/assets/:name{[A-Za-z0-9_.-]+}", (c) => serve(c, vendor.get(c.req.param("name"))))
    .get("/:name{[A-Za-z0-9_.-]*}", (c) =>
      serve(c, assets.get(c.req.param("name") || "index.html")),
    );
}
