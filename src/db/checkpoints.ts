import { StateError } from "./errors.js";

/**
 * Who checkpoints a writable WAL database: `background` (a thread of the process, off the
 * caller's path; SQLite's auto-checkpoint off) or `inline` (SQLite's auto-checkpoint, run inside
 * whichever commit crosses 1000 pages).
 */
export type CheckpointsMode = "background" | "inline";

/** Chooses the checkpoint mode for the whole process: `background` or `inline`. */
export const CHECKPOINTS_ENV = "AGENTSTATE_CHECKPOINTS";

/**
 * SQLite truncates a WAL larger than this when it restarts it. Without a limit the file keeps the
 * size of its largest burst for as long as a connection is open (404 MB after a 100k-patch bench).
 */
export const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024;

/** SQLite's own default page count, restored when the background thread cannot serve. */
export const INLINE_AUTOCHECKPOINT_PAGES = 1000;

const MODES: readonly CheckpointsMode[] = ["background", "inline"];

function parse(value: unknown, where: string): CheckpointsMode {
  if (typeof value === "string" && (MODES as readonly string[]).includes(value)) {
    return value as CheckpointsMode;
  }
  throw new StateError(
    "E_INVALID_ARGUMENT",
    `${where} must be "background" or "inline"; got ${JSON.stringify(value)}`,
    { details: { choices: [...MODES], got: String(value) } },
  );
}

/** The mode an option asks for, else `$AGENTSTATE_CHECKPOINTS`, else `background`. */
export function resolveCheckpoints(
  option: unknown,
  env: NodeJS.ProcessEnv = process.env,
): CheckpointsMode {
  if (option !== undefined) return parse(option, "checkpoints");
  const text = env[CHECKPOINTS_ENV]?.trim();
  if (text === undefined || text === "") return "background";
  return parse(text, `$${CHECKPOINTS_ENV}`);
}
