// Realistic, reproducible data for the benchmarks: transcript events in the legacy record shape
// (messages with content blocks, see examples/legacy-home/agents/main/sessions/*.jsonl), text drawn
// from a Zipf-distributed vocabulary, and ~2 KB session index entries like sessions.json's.
import { prng } from "./lib.mjs";

// The most frequent ranks are real English function words, as in real chat text; FTS5's unicode61
// tokenizer has no stop-word list, so they are indexed like any other word.
const COMMON = `the to and a of i you it is in that for on this with be can have do not are
  your my we at me but if so just what was will from or as all there an they about get one like
  up out now no please here would know when how which then file check run need should make see
  could also use time want their more some them our any these its new let done only did into yes
  thanks sure okay great right back still over set good just first last next before after again
  because where who why list add send read show open find work today tomorrow call note`
  .split(/\s+/)
  .filter(Boolean);

const ONSETS = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w"];
const CLUSTERS = ["", "br", "ch", "cl", "dr", "gr", "pl", "sh", "st", "th", "tr", "sp"];
const VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io"];
const CODAS = ["", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "x"];

/**
 * A vocabulary of `size` distinct lowercase words, rank 0 the most frequent, and a sampler that
 * draws rank r with probability ∝ 1 / (r + 1)^exponent (Zipf). Deterministic for a seed.
 */
export function makeVocabulary(size = 4000, { seed = 7, exponent = 1.0 } = {}) {
  const random = prng(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const words = [...new Set(COMMON)];
  const seen = new Set(words);
  while (words.length < size) {
    const syllables = 1 + Math.floor(random() * 3);
    let word = "";
    for (let s = 0; s < syllables; s++) {
      word += (s === 0 && random() < 0.4 ? pick(CLUSTERS) : pick(ONSETS)) + pick(VOWELS);
    }
    word += pick(CODAS);
    if (word.length >= 3 && !seen.has(word)) {
      seen.add(word);
      words.push(word);
    }
  }
  const cdf = new Float64Array(size);
  let total = 0;
  for (let r = 0; r < size; r++) {
    total += 1 / (r + 1) ** exponent;
    cdf[r] = total;
  }
  for (let r = 0; r < size; r++) cdf[r] /= total;
  /** A random rank, by binary search over the cumulative distribution. */
  const sampleRank = (rand) => {
    const x = rand();
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return { words, sampleRank };
}

/** A message body of 5 to 60 words; sentence-cased with some punctuation, like chat text. */
export function makeText(vocab, rand, { min = 5, max = 60 } = {}) {
  const count = min + Math.floor(rand() * (max - min + 1));
  const out = [];
  for (let i = 0; i < count; i++) {
    let word = vocab.words[vocab.sampleRank(rand)];
    if (i === 0) word = word[0].toUpperCase() + word.slice(1);
    if (i === count - 1) word += rand() < 0.3 ? "?" : ".";
    else if (rand() < 0.08) word += ",";
    out.push(word);
  }
  return out.join(" ");
}

const TOOLS = ["exec", "read", "edit", "web_fetch", "calendar_list", "reminders_add", "memory_get"];
const USAGE = {
  input: 1834,
  output: 212,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2046,
  cost: { input: 0.0055, output: 0.0032, cacheRead: 0, cacheWrite: 0, total: 0.0087 },
};

function hex(rand, length) {
  let out = "";
  for (let i = 0; i < length; i++) out += Math.floor(rand() * 16).toString(16);
  return out;
}

/**
 * A generator of transcript events to append (no id, parentId or timestamp: the store assigns
 * them): a mix of user messages, assistant text, assistant tool calls and tool results.
 */
export function eventFactory(vocab, seed = 11) {
  const rand = prng(seed);
  let clock = 1772438400000;
  return () => {
    clock += 1000 + Math.floor(rand() * 5000);
    const kind = rand();
    const text = makeText(vocab, rand);
    if (kind < 0.25) {
      return {
        type: "message",
        message: { role: "user", content: [{ type: "text", text }], timestamp: clock },
      };
    }
    const assistant = (content, stopReason) => ({
      type: "message",
      message: {
        role: "assistant",
        content,
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        usage: USAGE,
        stopReason,
        timestamp: clock,
      },
    });
    if (kind < 0.6) return assistant([{ type: "text", text }], "stop");
    const tool = TOOLS[Math.floor(rand() * TOOLS.length)];
    if (kind < 0.8) {
      return assistant(
        [
          { type: "thinking", thinking: text, thinkingSignature: hex(rand, 64) },
          {
            type: "toolCall",
            id: `toolu_${hex(rand, 24)}`,
            name: tool,
            arguments: { q: text.slice(0, 40) },
          },
        ],
        "toolUse",
      );
    }
    return {
      type: "message",
      message: {
        role: "toolResult",
        toolCallId: `toolu_${hex(rand, 24)}`,
        toolName: tool,
        content: [{ type: "text", text }],
        isError: false,
        details: { status: "ok", durationMs: Math.floor(rand() * 900) },
        timestamp: clock,
      },
    };
  };
}

/** A UUID v4 shaped id from the seeded PRNG. */
export function makeUuid(rand) {
  const h = hex(rand, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The session key of entry `i`, in the legacy grammar. */
export function sessionKeyOf(i) {
  return i === 0 ? "agent:main:main" : `agent:main:telegram:direct:${100000000 + i}`;
}

/**
 * A session index entry as sessions.json holds it, about `bytes` of compact JSON: the routing
 * fields, token counters, origin, and a skills snapshot prompt (which is what makes real entries
 * 1–70 KB) padded to size.
 */
export function makeSessionEntry(i, rand, bytes = 2048) {
  const sessionId = makeUuid(rand);
  const entry = {
    sessionId,
    updatedAt: 1772611152400 + i,
    sessionFile: `/home/demo/.openclaw/agents/main/sessions/${sessionId}.jsonl`,
    systemSent: true,
    abortedLastRun: false,
    chatType: "direct",
    deliveryContext: { channel: "telegram", to: String(100000000 + i) },
    lastChannel: "telegram",
    lastTo: String(100000000 + i),
    origin: { provider: "telegram", surface: "telegram", chatType: "direct", label: `User ${i}` },
    modelProvider: "anthropic",
    model: "claude-sonnet-4-5",
    inputTokens: 12840,
    outputTokens: 1510,
    totalTokens: 14350,
    contextTokens: 200000,
    compactionCount: 0,
    skillsSnapshot: {
      prompt: "",
      skills: [{ name: "weather" }, { name: "calendar" }, { name: "reminders" }],
      version: 0,
    },
  };
  const base = JSON.stringify(entry).length;
  const filler = "You can use the following skills when they help the user. ".repeat(40);
  entry.skillsSnapshot.prompt = filler.slice(0, Math.max(0, bytes - base));
  return entry;
}
