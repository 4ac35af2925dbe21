import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The shared corpus of real legacy files, beside the project (always there under CI). */
export const CORPUS_DIR = fileURLToPath(new URL("../../../shared/corpus/real/", import.meta.url));
const TRANSCRIPT_NAME = /\.jsonl(\.(deleted|reset)\..+)?$/;

export interface CorpusFile {
  name: string;
  path: string;
  text: string;
}

function* walk(dir: string, inSessions: boolean): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const parent = dir.split(/[\\/]/).at(-2);
      yield* walk(path, entry.name === "sessions" && parent === "agents");
    } else if (inSessions && entry.isFile() && TRANSCRIPT_NAME.test(entry.name)) yield path;
  }
}

/** Every non-empty transcript (live, deleted and reset archives) in the corpus. */
export function corpusTranscripts(): CorpusFile[] {
  if (!existsSync(CORPUS_DIR)) {
    if (process.env.CI === "true") throw new Error(`the shared corpus is missing at ${CORPUS_DIR}`);
    return [];
  }
  return [...walk(CORPUS_DIR, false)]
    .map((path) => ({ name: relative(CORPUS_DIR, path), path, text: readFileSync(path, "utf8") }))
    .filter((file) => file.text.length > 0);
}

/** The session id a legacy transcript file stands for: its name up to `.jsonl`. */
export function sessionIdOfFile(name: string): string {
  const base = name.split(/[\\/]/).at(-1) ?? name;
  return base.slice(0, base.indexOf(".jsonl"));
}

/**
 * Directories of the corpus laid out like a legacy home (holding `agents/`, `cron/` or
 * `subagents/`), leaving out older snapshots kept under `_versions/`.
 */
export function corpusHomes(): string[] {
  if (!existsSync(CORPUS_DIR)) {
    if (process.env.CI === "true") throw new Error(`the shared corpus is missing at ${CORPUS_DIR}`);
    return [];
  }
  const homes = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name === "_versions") continue;
      const path = join(dir, entry.name);
      if (["agents", "cron", "subagents"].includes(entry.name) && !dir.endsWith("/agents"))
        homes.add(dir);
      walk(path);
    }
  };
  walk(CORPUS_DIR);
  return [...homes].sort();
}
