/**
 * The one check of an options object's keys. It lives in db/ because `openDatabase` is the lowest
 * code that takes options; every layer above imports it from here.
 *
 * A misspelled option would otherwise be ignored without a word, so each unknown key is refused
 * by name: `TypeError("Unknown option for <where>: <key>")`. `unknown` words the message where a
 * public API already promised another text.
 */
export function rejectUnknownOptions(
  options: unknown,
  allowed: ReadonlySet<string> | readonly string[],
  where: string,
  unknown: (key: string) => string = (key) => `Unknown option for ${where}: ${key}`,
): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new TypeError(`Expected an options object for ${where}`);
  }
  const known = allowed instanceof Set ? allowed : new Set(allowed as readonly string[]);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new TypeError(unknown(key));
  }
}
