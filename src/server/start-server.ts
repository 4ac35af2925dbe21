import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { StateError } from "../db/errors.js";
import { rejectUnknownOptions } from "../db/options.js";
import { openStateHome, StateHome } from "../home.js";
import { createApp } from "./app.js";
import { isLoopbackHost, MIN_TOKEN_LENGTH } from "./auth.js";

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 4711;

export interface StartServerOptions {
  /** A home path (opened here, closed by `close()`) or an open StateHome (left open). */
  home: string | StateHome;
  /** Default 127.0.0.1. Any host that is not loopback requires `token`. */
  host?: string;
  /** Default 4711; 0 picks a free port. */
  port?: number;
  /** Required on every request when set: `Authorization: Bearer`, or the cookie `/?token=` sets. */
  token?: string;
  /** Serve the write endpoints (default false: read-only). */
  write?: boolean;
}

export interface RunningServer {
  /** The dashboard's address; with a token, one that signs the browser in. */
  url: string;
  host: string;
  port: number;
  /** Ends live streams and connections, stops listening, closes a home opened here. */
  close(): Promise<void>;
}

const OPTION_KEYS = new Set(["home", "host", "port", "token", "write"]);
// RFC 6750's b64token: also safe as a cookie value and in a URL query.
const TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

function invalid(message: string): StateError {
  return new StateError("E_INVALID_ARGUMENT", message);
}

function checkOptions(options: StartServerOptions) {
  rejectUnknownOptions(options, OPTION_KEYS, "startServer");
  const { host = DEFAULT_HOST, port = DEFAULT_PORT, token, write = false } = options;
  if (typeof host !== "string" || host === "") throw invalid("host must be a host name or address");
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw invalid(`port must be an integer from 0 to 65535, got ${String(port)}`);
  }
  if (
    token !== undefined &&
    (token.length < MIN_TOKEN_LENGTH || token.length > 512 || !TOKEN.test(token))
  ) {
    throw invalid(
      `the token must be ${MIN_TOKEN_LENGTH} to 512 characters of A-Z a-z 0-9 - . _ ~ + / (e.g. openssl rand -hex 16)`,
    );
  }
  if (token === undefined && !isLoopbackHost(host)) {
    throw invalid(
      `refusing to serve on ${host} without a token: anyone who can reach it could read every transcript. Pass --token, or bind 127.0.0.1`,
    );
  }
  return { host, port, token, write: write === true };
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      if (error.code === "EADDRINUSE") {
        reject(
          new StateError(
            "E_CONFLICT",
            `${where} is in use; pass another --port (0 picks a free one)`,
            { cause: error },
          ),
        );
      } else if (
        error.code === "EADDRNOTAVAIL" ||
        error.code === "ENOTFOUND" ||
        error.code === "EACCES"
      ) {
        reject(
          new StateError("E_INVALID_ARGUMENT", `cannot listen on ${where}: ${error.code}`, {
            cause: error,
          }),
        );
      } else {
        reject(error);
      }
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

function urlOf(host: string, port: number, token: string | undefined): string {
  const name = host.includes(":") ? `[${host}]` : host;
  return `http://${name}:${port}/${token === undefined ? "" : `?token=${encodeURIComponent(token)}`}`;
}

/**
 * Serves the HTTP API and the dashboard for a home. Binds 127.0.0.1 unless told otherwise, and
 * refuses any other address without a token; read-only unless `write` is set.
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { host, port, token, write } = checkOptions(options);
  const owned =
    options.home instanceof StateHome ? null : openStateHome({ home: options.home, create: false });
  const home = owned ?? (options.home as StateHome);
  const { app, close: closeApp } = createApp({ home, token, write, warmStorage: true });
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  let address: AddressInfo;
  try {
    address = await listen(server, port, host);
  } catch (error) {
    closeApp();
    owned?.close();
    throw error;
  }
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= new Promise<void>((resolve) => {
      closeApp();
      server.close(() => {
        owned?.close();
        resolve();
      });
      // Open EventSources would otherwise hold the server open until the browser goes away.
      server.closeAllConnections();
    });
    return closing;
  };
  return { url: urlOf(host, address.port, token), host, port: address.port, close };
}
