import { BLOB_REF_PREFIX, restoreInlineBlobs } from "../../transcript/blobs.js";
import { type ArchivedEvent, ArchiveReader } from "../../transcript/cold-archive.js";
import type { TranscriptEvent } from "../../transcript/event.js";
import type { OpenArchiveFile } from "./cold-files.js";
import type { ColdSessionRow } from "./transcript-rows.js";

/** A stored event as read back (the shape TranscriptStore returns). */
export interface ColdStoredEvent {
  sessionId: string;
  seq: number;
  event: TranscriptEvent;
  createdAt: number;
}

/**
 * One cold session's archive, open for reads: events come back exactly as TranscriptStore
 * decodes hot rows, with their blobs from the archive. Close it when done.
 */
export class ColdArchive {
  readonly reader: ArchiveReader;

  constructor(
    readonly sessionId: string,
    readonly row: ColdSessionRow,
    private readonly file: OpenArchiveFile,
  ) {
    try {
      this.reader = new ArchiveReader(file.readAt, file.size);
    } catch (error) {
      file.close();
      throw error;
    }
  }

  close(): void {
    this.file.close();
  }

  decode(archived: ArchivedEvent): ColdStoredEvent {
    let event = JSON.parse(archived.eventJson) as TranscriptEvent;
    if (archived.eventJson.includes(BLOB_REF_PREFIX)) {
      event = restoreInlineBlobs(event, (sha) => this.reader.blob(sha));
    }
    return { sessionId: this.sessionId, seq: archived.seq, event, createdAt: archived.createdAt };
  }

  /** Up to `limit` events after `afterSeq`, in seq order. */
  read(afterSeq: number, limit: number): ColdStoredEvent[] {
    const out: ColdStoredEvent[] = [];
    if (limit <= 0) return out;
    for (const archived of this.reader.eventsAfter(afterSeq)) {
      out.push(this.decode(archived));
      if (out.length >= limit) break;
    }
    return out;
  }

  /** The event with id `eventId`, scanning members from the newest. */
  find(eventId: string): ColdStoredEvent | undefined {
    for (let i = this.reader.index.members.length - 1; i >= 0; i--) {
      const found = this.reader.member(i).find((e) => e.eventId === eventId);
      if (found !== undefined) return this.decode(found);
    }
    return undefined;
  }

  /** The stored JSON of the events at `seqs`, each member inflated once. */
  jsonBySeq(seqs: readonly number[]): Map<number, string> {
    const wanted = new Set(seqs);
    const members = new Set(seqs.map((seq) => this.reader.memberOf(seq)).filter((i) => i >= 0));
    const out = new Map<number, string>();
    for (const i of members) {
      for (const e of this.reader.member(i)) if (wanted.has(e.seq)) out.set(e.seq, e.eventJson);
    }
    return out;
  }
}
