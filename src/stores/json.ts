import { StateError } from "../db/errors.js";

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/** JSON.stringify that refuses what would not round-trip (undefined, functions, bigint, cycles). */
export function toJson(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} is not JSON-serializable: ${String(error)}`,
      {
        cause: error,
      },
    );
  }
  if (text === undefined) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} is not JSON-serializable (${typeof value})`,
    );
  }
  return text;
}
