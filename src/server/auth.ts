import { createHash, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { ApiError } from "./errors.js";

/**
 * The sign-in cookie's name. Browsers share cookies between ports of one host, so two servers on
 * 127.0.0.1 would otherwise overwrite each other's token.
 */
export function tokenCookie(url: URL): string {
  return `agentstate_token_${url.port || (url.protocol === "https:" ? "443" : "80")}`;
}
export const MIN_TOKEN_LENGTH = 16;

/** True for names and addresses that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const name = bare.toLowerCase();
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  if (isIP(name) === 6) return name === "::1" || name.startsWith("::ffff:127.");
  return false;
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** Equal-time comparison: hashing first makes the lengths equal too. */
function sameToken(given: string | undefined, expected: Buffer): boolean {
  return given !== undefined && timingSafeEqual(digest(given), expected);
}

function bearerOf(c: Context): string | undefined {
  const header = c.req.header("authorization");
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export interface AccessOptions {
  token: string | undefined;
  write: boolean;
}

/**
 * Who may talk to the server and what they may do:
 * - without a token, only requests addressed to a loopback name: a page on another site that
 *   rebinds its DNS name to 127.0.0.1 would otherwise read the API from the user's browser;
 * - with a token, every request carries it as `Authorization: Bearer` or as the cookie that
 *   opening `/?token=…` sets (EventSource cannot send headers);
 * - writes only with `--write`, only as JSON (which a cross-site form cannot send) and only from
 *   this origin when the browser names one.
 */
export function access(options: AccessOptions): MiddlewareHandler {
  const expected = options.token === undefined ? undefined : digest(options.token);
  return async (c, next) => {
    // The request URL carries the Host header the client sent (the node adapter builds it so).
    const url = new URL(c.req.url);
    if (expected === undefined && !isLoopbackHost(url.hostname)) {
      throw new ApiError(403, "E_FORBIDDEN", "this server answers only to a loopback host name");
    }
    if (expected !== undefined) {
      const fromQuery = c.req.path === "/" ? c.req.query("token") : undefined;
      if (fromQuery !== undefined && sameToken(fromQuery, expected)) {
        // Moved into an HttpOnly cookie and out of the address bar (and the browser history).
        const cookie = { httpOnly: true, sameSite: "Strict", path: "/" } as const;
        setCookie(c, tokenCookie(url), fromQuery, cookie);
        return c.redirect("/", 303);
      }
      if (!sameToken(bearerOf(c) ?? getCookie(c, tokenCookie(url)), expected)) {
        throw new ApiError(
          401,
          "E_UNAUTHORIZED",
          "a valid token is required: open the URL `agentstate serve` printed, or send Authorization: Bearer <token>",
        );
      }
    }
    if (!SAFE_METHODS.has(c.req.method)) {
      if (!options.write) {
        throw new ApiError(403, "E_READ_ONLY", "the server is read-only; start it with --write");
      }
      const origin = c.req.header("origin");
      if (origin !== undefined && origin !== url.origin) {
        throw new ApiError(403, "E_FORBIDDEN", "cross-origin writes are refused");
      }
    }
    await next();
  };
}
