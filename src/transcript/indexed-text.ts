import { ftsDocument } from "./cjk-terms.js";
import type { TranscriptEvent } from "./event.js";
import { searchableText } from "./search-text.js";

// The one definition of what a full-text index holds for an event. The hot index (transcript_fts)
// writes it, a move copies it to the cold index, and a rebuilt cold index writes it again from the
// archives: the same function everywhere, so a rebuilt row is the row a move would have copied.

/** The text the full-text index holds for an event: its searchable text, CJK runs cut in bigrams. */
export function indexedText(event: TranscriptEvent): string {
  return ftsDocument(searchableText(event));
}

/**
 * `indexedText` of an event as stored (`event_json`, in a hot row or an archive), as the hot index
 * computes it for a row it reads back; "" when the event has no searchable text (no row is written).
 */
export function storedEventText(eventJson: string): string {
  return indexedText(JSON.parse(eventJson) as TranscriptEvent);
}
