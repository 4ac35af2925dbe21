import type { InputRecord, InputState } from "./input-rows.js";
import type { InputListOptions } from "./input-types.js";

/** An input as `recover` would leave it, with the state its row holds now. */
export interface InputView extends InputRecord {
  /** The state in the row: `claimed` where `state` says `interrupted` but no `recover` ran yet. */
  storedState: InputState;
}

type List = (options: InputListOptions) => InputRecord[];
type Test = (record: InputRecord) => boolean;

const DEFAULT_LIMIT = 100;

/**
 * `list` with every orphaned input (claimed, lease lapsed, owner dead) read as interrupted. Reads
 * only: an operator's look must not change what the gateway's own `recover` finds and reports.
 */
export function viewInputs(list: List, options: InputListOptions, orphaned: Test): InputView[] {
  const view = (record: InputRecord): InputView =>
    orphaned(record)
      ? { ...record, state: "interrupted", storedState: record.state }
      : { ...record, storedState: record.state };
  const limit = options.limit ?? DEFAULT_LIMIT;
  if (options.state === "interrupted") {
    const stored = list(options);
    const lapsed = collect(list, { ...options, state: "claimed" }, orphaned, limit);
    // Both lists are in arrival order, so the first `limit` of their union are among them.
    const merged = [...stored, ...lapsed].sort((a, b) => a.arrivalSeq - b.arrivalSeq);
    return merged.slice(0, limit).map(view);
  }
  if (options.state === "claimed") {
    return collect(list, options, (record) => !orphaned(record), limit).map(view);
  }
  return list(options).map(view);
}

/** Up to `limit` records that pass `keep`, paging on past those that do not. */
function collect(list: List, options: InputListOptions, keep: Test, limit: number): InputRecord[] {
  const kept: InputRecord[] = [];
  let afterSeq = options.afterSeq ?? 0;
  for (;;) {
    const page = list({ ...options, afterSeq, limit });
    for (const record of page) if (kept.length < limit && keep(record)) kept.push(record);
    const last = page.at(-1);
    if (kept.length >= limit || page.length < limit || last === undefined) return kept;
    afterSeq = last.arrivalSeq;
  }
}

/** Reads this many inputs per page while looking for the session keys to recover. */
const KEY_PAGE = 1_000;

/**
 * The session keys with a claimed or interrupted input, in the order their oldest such input
 * arrived: the keys a `recover` of every key has to visit. Pages through each state, so a key with
 * many inputs costs one page, not one query per input.
 */
export function keysToRecover(list: List): string[] {
  const firstSeen = new Map<string, number>();
  for (const state of ["claimed", "interrupted"] as const) {
    let afterSeq = 0;
    for (;;) {
      const page = list({ state, afterSeq, limit: KEY_PAGE });
      for (const record of page) {
        const seen = firstSeen.get(record.sessionKey);
        if (seen === undefined || record.arrivalSeq < seen) {
          firstSeen.set(record.sessionKey, record.arrivalSeq);
        }
      }
      const last = page.at(-1);
      if (!last || page.length < KEY_PAGE) break;
      afterSeq = last.arrivalSeq;
    }
  }
  return [...firstSeen].sort((a, b) => a[1] - b[1]).map(([key]) => key);
}
