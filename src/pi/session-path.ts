const PI_FILE_EXTENSION = ".jsonl";
const PI_FILE_STEM = /^\d{4}-\d\d-\d\dT[\d-]+Z_/;

/**
 * The session id a pi session file path names (`<dir>/<time>_<id>.jsonl` or `<dir>/<id>.jsonl`),
 * or the argument itself when it is a bare id: code that resumes by path keeps working.
 */
export function sessionIdOf(idOrPath: string): string {
  const name = idOrPath.split(/[/\\]/).at(-1) ?? idOrPath;
  if (!name.endsWith(PI_FILE_EXTENSION)) return idOrPath;
  const stem = name.slice(0, -PI_FILE_EXTENSION.length);
  return PI_FILE_STEM.test(stem) ? stem.slice(stem.indexOf("_") + 1) : stem;
}
