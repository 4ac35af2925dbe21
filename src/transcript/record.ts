/**
 * True for a JSON object (not null, not an array). Transcript records come from parsed JSON, so
 * this is the one shape test every module needs before reading a field.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
