/**
 * A plain in-memory model of an agent's transcripts: the oracle the model-based test checks the
 * store against. It imports nothing from the code under test, so a bug shared by the store and
 * its helpers (tree walk, context builder, search text) cannot hide behind itself.
 */

export type ModelEventType = "session" | "message" | "branch_summary" | "label";

export interface ModelEvent {
  id: string;
  /** null for a root, undefined for the header (which has no parent key). */
  parentId: string | null | undefined;
  type: ModelEventType;
  /** The searchable text: message text or branch summary; "" for headers and labels. */
  text: string;
  key: string | null;
}

export interface ModelSession {
  /** In seq order: `events[i]` has seq `i + 1`; `events[0]` is the header. */
  events: ModelEvent[];
  leaf: string | null;
}

/** What an append should do: return an earlier event, or store a new one at this seq. */
export type AppendExpectation =
  | { deduplicated: true; seq: number; id: string }
  | { deduplicated: false; seq: number; parentId: string | null };

/** Case and diacritics folded away: the documented matching rule of search. */
export function fold(word: string): string {
  return word.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}

const NON_WORD = /[^\p{L}\p{N}_]+/u;
const HAN_OR_KANA = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;

/**
 * Whether `text` contains `word`: a latin word must be a whole word (folded); a CJK word is found
 * inside a run of CJK text, which has no spaces between words.
 */
export function containsWord(text: string, word: string): boolean {
  if (HAN_OR_KANA.test(word)) return text.includes(word);
  const wanted = fold(word);
  return text.split(NON_WORD).some((token) => fold(token) === wanted);
}

export class TranscriptModel {
  readonly sessions = new Map<string, ModelSession>();

  /** What appending `key` to `sessionId` must do, before `commit` records it. */
  expectAppend(sessionId: string, key: string | null): AppendExpectation {
    const session = this.sessions.get(sessionId);
    const first = key === null ? undefined : session?.events.find((e) => e.key === key);
    if (first !== undefined && session !== undefined) {
      return { deduplicated: true, seq: session.events.indexOf(first) + 1, id: first.id };
    }
    // A new session gets its header first, so its first event has seq 2.
    const length = session?.events.length ?? 1;
    return { deduplicated: false, seq: length + 1, parentId: session?.leaf ?? null };
  }

  /** Records a stored event on the current leaf; the event becomes the leaf. */
  commit(sessionId: string, event: Omit<ModelEvent, "parentId">, parentId: string | null): void {
    const session = this.sessionOrNew(sessionId);
    session.events.push({ ...event, parentId });
    session.leaf = event.id;
  }

  /** Moves the leaf without appending (a branch without a summary). */
  moveLeaf(sessionId: string, eventId: string): void {
    const session = this.sessions.get(sessionId);
    if (session === undefined) throw new Error(`model has no session ${sessionId}`);
    session.leaf = eventId;
  }

  delete(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** Events a branch or label may point at: anything but the header. */
  targets(sessionId: string): ModelEvent[] {
    return this.sessions.get(sessionId)?.events.slice(1) ?? [];
  }

  /** The ids on the path root -> leaf, walking parent links, then only what a model sees. */
  contextIds(sessionId: string): Array<{ id: string; kind: "message" | "summary" }> {
    const session = this.sessions.get(sessionId);
    if (session === undefined) return [];
    const byId = new Map(session.events.map((event) => [event.id, event]));
    const path: ModelEvent[] = [];
    for (let id = session.leaf; id !== null; ) {
      const event = byId.get(id);
      if (event === undefined || path.length > session.events.length) {
        throw new Error(`model path from ${session.leaf} is broken at ${id}`);
      }
      path.push(event);
      id = event.parentId ?? null;
    }
    return path
      .reverse()
      .filter((event) => event.type === "message" || event.type === "branch_summary")
      .map((event) => ({ id: event.id, kind: event.type === "message" ? "message" : "summary" }));
  }

  /** `sessionId/eventId` of every live event whose text contains `word`. */
  matches(word: string, sessionId?: string): Map<string, ModelEvent & { seq: number }> {
    const out = new Map<string, ModelEvent & { seq: number }>();
    for (const [id, session] of this.sessions) {
      if (sessionId !== undefined && id !== sessionId) continue;
      session.events.forEach((event, index) => {
        if (containsWord(event.text, word))
          out.set(`${id}/${event.id}`, { ...event, seq: index + 1 });
      });
    }
    return out;
  }

  private sessionOrNew(sessionId: string): ModelSession {
    let session = this.sessions.get(sessionId);
    if (session === undefined) {
      session = {
        events: [{ id: sessionId, parentId: undefined, type: "session", text: "", key: null }],
        leaf: null,
      };
      this.sessions.set(sessionId, session);
    }
    return session;
  }
}
