import type { FileEntry, SessionEntry, SessionManager } from "@mariozechner/pi-coding-agent";

/**
 * The private state of pi's `SessionManager` that the adapter reads and sets. pi keeps its tree,
 * labels and leaf in these fields; reusing them (instead of a second copy) keeps every getter
 * identical to pi's own by construction. `checkInternals` refuses a pi release that renamed them.
 */
export interface PiInternals {
  sessionId: string;
  cwd: string;
  fileEntries: FileEntry[];
  byId: Map<string, SessionEntry>;
  labelsById: Map<string, string>;
  labelTimestampsById: Map<string, string>;
  leafId: string | null;
  _buildIndex(): void;
}

export function internals(manager: SessionManager): PiInternals {
  return manager as unknown as PiInternals;
}

/** Throws a TypeError naming the supported releases when pi's internals are not the expected ones. */
export function checkInternals(manager: SessionManager): void {
  const state = internals(manager);
  const sound =
    Array.isArray(state.fileEntries) &&
    state.byId instanceof Map &&
    state.labelsById instanceof Map &&
    state.labelTimestampsById instanceof Map &&
    "leafId" in state &&
    typeof state._buildIndex === "function";
  if (!sound) {
    throw new TypeError(
      "Expected @mariozechner/pi-coding-agent 0.65.0 or newer: this release's SessionManager keeps its state differently",
    );
  }
}
