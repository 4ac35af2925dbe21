import type { Context } from "hono";
import type { z as Zod, ZodType } from "zod";
import { checkEventId, checkSessionId, validateAgentId } from "../ids.js";
import { lazyRequire } from "../lazy-require.js";
import { ApiError, badRequest } from "./errors.js";

// The CommonJS zod the maintenance policy loads (src/maintenance/policy.ts), not its ES module:
// a server that also reads agentstate.json would otherwise load zod twice.
const { z } = lazyRequire<typeof import("zod")>("zod")();

// Every parameter is checked here before it reaches a store: ids and keys by the same rules the
// stores apply (so a request can never name a path or smuggle SQL, which is bound anyway), numbers
// as bounded decimal digits (so 1e400, -1, 0x10 and 99999999999999999999 are 400s, not NaN).

const MAX_SESSION_KEY = 512;
const MAX_TEXT = 1000;
const MAX_MESSAGE = 200;

function isPrintable(value: string): boolean {
  // Control characters and lone surrogates: the stores refuse them, so refuse them up front.
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return false;
  }
  return !/\p{Surrogate}/u.test(value);
}

/** A zod refinement from one of the id validators the stores apply: one rule set, not two. */
function passes(check: (value: string) => unknown): (value: string) => boolean {
  return (value) => {
    try {
      check(value);
      return true;
    } catch {
      return false;
    }
  };
}

export const agentId = z
  .string()
  .refine(
    passes(validateAgentId),
    "must be 1 to 64 letters, digits, '_', '-' or '.', with no '..'",
  );
export const sessionId = z
  .string()
  .refine(passes(checkSessionId), "must be 1 to 200 printable characters, not '.' or '..'");
export const eventId = z.string().refine(
  passes((id) => checkEventId(id, "")),
  "must be 1 to 200 printable characters",
);
export const sessionKey = z
  .string()
  .min(1)
  .max(MAX_SESSION_KEY)
  .refine(isPrintable, "must be printable text");
export const text = z.string().max(MAX_TEXT).refine(isPrintable, "must be printable text");

/** A decimal integer in [min, max], written as digits only. */
export function integer(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,16}$/, "must be a whole number written in digits")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** Unix milliseconds as digits, or an ISO 8601 time. */
export const time = z
  .string()
  .max(64)
  .transform((value, ctx) => {
    const ms = /^\d{1,16}$/.test(value) ? Number(value) : Date.parse(value);
    if (!Number.isSafeInteger(ms)) {
      ctx.addIssue({ code: "custom", message: "must be Unix milliseconds or an ISO 8601 time" });
      return z.NEVER;
    }
    return ms;
  });

export const flag = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

function clip(value: string): string {
  return value.length > MAX_MESSAGE ? `${value.slice(0, MAX_MESSAGE)}…` : value;
}

function invalid(where: string, error: Zod.ZodError): ApiError {
  const issues = error.issues.slice(0, 10).map((issue) => ({
    path: clip(issue.path.map(String).join(".")),
    message: clip(issue.message),
  }));
  const first = issues[0];
  const name = first?.path ? ` ${first.path}` : "";
  return badRequest(`invalid ${where}${name}: ${first?.message ?? "rejected"}`, { issues });
}

function check<T>(where: string, schema: ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (!result.success) throw invalid(where, result.error);
  return result.data;
}

/** Path parameters, checked against `schema`. */
export function params<T>(c: Context, schema: ZodType<T>): T {
  return check("path parameter", schema, c.req.param());
}

/** Query parameters, checked against a strict schema; a repeated parameter is ambiguous. */
export function query<T>(c: Context, schema: ZodType<T>): T {
  for (const [name, values] of Object.entries(c.req.queries())) {
    if (values.length > 1) {
      throw badRequest(`query parameter ${clip(name)} is given ${values.length} times`);
    }
  }
  return check("query parameter", schema, c.req.query());
}

/** A JSON request body, checked against `schema`. */
export async function body<T>(c: Context, schema: ZodType<T>): Promise<T> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError(
      415,
      "E_UNSUPPORTED_MEDIA_TYPE",
      "the request body must be application/json",
    );
  }
  return check("body field", schema, parseJson(decodeUtf8(await c.req.arrayBuffer())));
}

// Fatal: bytes that are not UTF-8 would otherwise be stored as U+FFFD, changed without a word.
const UTF8 = new TextDecoder("utf-8", { fatal: true });

function decodeUtf8(bytes: ArrayBuffer): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw badRequest("the request body is not valid UTF-8");
  }
}

/** JSON whose every number is finite: `1e400` parses to Infinity, which would be stored as null. */
function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text, (key, item: unknown) => {
      if (typeof item === "number" && !Number.isFinite(item))
        throw badRequest(`invalid body field ${clip(key)}: a number too large to store`);
      return item;
    });
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw badRequest("the request body is not valid JSON");
  }
  return value;
}

export { z };
