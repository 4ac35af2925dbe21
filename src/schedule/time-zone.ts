import { StateError } from "../db/errors.js";

/** Returns `timeZone` if `Intl` knows it (`"UTC"`, `"America/New_York"` …), else E_INVALID_ARGUMENT. */
export function checkTimeZone(timeZone: unknown): string {
  try {
    if (typeof timeZone !== "string" || timeZone === "") throw new RangeError("not a string");
    // Croner reads zones through Intl too, but only when it computes a run: refuse a bad one now.
    new Intl.DateTimeFormat("en-US", { timeZone });
    return timeZone;
  } catch (error) {
    throw new StateError("E_INVALID_ARGUMENT", `unknown time zone ${JSON.stringify(timeZone)}`, {
      cause: error,
    });
  }
}

/** The host's zone: what a schedule without `tz` has always meant in the legacy scheduler. */
export function hostTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}
