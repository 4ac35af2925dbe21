import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { isStateError, type StateErrorCode } from "../db/errors.js";

/** Codes only the HTTP surface produces; everything else carries a StateError code. */
export type HttpOnlyCode =
  | "E_UNAUTHORIZED"
  | "E_FORBIDDEN"
  | "E_READ_ONLY"
  | "E_UNSUPPORTED_MEDIA_TYPE"
  | "E_INTERNAL";

export type ApiErrorCode = StateErrorCode | HttpOnlyCode;

export interface ApiErrorBody {
  error: { code: ApiErrorCode; message: string; details: Record<string, unknown> };
}

/** HTTP status per StateError code, in one place (the CLI's exit codes are its counterpart). */
const STATUS_BY_CODE: Record<StateErrorCode, ContentfulStatusCode> = {
  E_INVALID_ARGUMENT: 400,
  E_INVALID_ID: 400,
  E_PATH: 400,
  E_NOT_FOUND: 404,
  E_CONFLICT: 409,
  E_CONSTRAINT: 409,
  E_LEASE_LOST: 409,
  E_NOT_OWNER: 409,
  E_TOO_LARGE: 413,
  E_BUSY: 503,
  E_CLOSED: 503,
  E_CORRUPT: 500,
  E_CORRUPT_SOURCE: 500,
  E_DAMAGED: 500,
  E_IO: 500,
  E_NOT_A_DATABASE: 500,
  E_SCHEMA_MISMATCH: 500,
  E_SCHEMA_TOO_NEW: 500,
  E_SQLITE: 500,
  E_UNSAFE_FILESYSTEM: 500,
  E_UNSUPPORTED: 501,
};

/**
 * The one exception routes and middleware throw: an HTTP status plus a stable code. StateErrors
 * from the stores are not wrapped; `onError` maps them by code.
 */
export class ApiError extends HTTPException {
  readonly code: ApiErrorCode;
  readonly details: Record<string, unknown>;

  constructor(
    status: ContentfulStatusCode,
    code: ApiErrorCode,
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(status, { message });
    this.code = code;
    this.details = details;
  }
}

export function badRequest(message: string, details: Record<string, unknown> = {}): ApiError {
  return new ApiError(400, "E_INVALID_ARGUMENT", message, details);
}

function describe(error: unknown): { status: ContentfulStatusCode; body: ApiErrorBody } {
  if (error instanceof ApiError) {
    const { code, message, details } = error;
    return {
      status: error.status as ContentfulStatusCode,
      body: { error: { code, message, details } },
    };
  }
  if (isStateError(error)) {
    return { status: STATUS_BY_CODE[error.code], body: { error: error.toJSON() } };
  }
  if (error instanceof HTTPException) {
    // Hono's own middleware (body limit, malformed JSON) throws these.
    const status = error.status as ContentfulStatusCode;
    const code: ApiErrorCode =
      status === 413 ? "E_TOO_LARGE" : status < 500 ? "E_INVALID_ARGUMENT" : "E_INTERNAL";
    return { status, body: { error: { code, message: error.message, details: {} } } };
  }
  // A bug, not the caller's fault: the message stays in the server's log, not in the response.
  return {
    status: 500,
    body: { error: { code: "E_INTERNAL", message: "internal server error", details: {} } },
  };
}

/** The app's single error handler: every failure becomes `{ error: { code, message, details } }`. */
export function onError(error: Error, c: Context): Response {
  const { status, body } = describe(error);
  if (status >= 500) console.error(`agentstate serve: ${c.req.method} ${c.req.path}:`, error);
  c.header("Cache-Control", "no-store");
  return c.json(body, status);
}
