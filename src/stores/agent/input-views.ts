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
