import { FACT_CATEGORIES } from "./taxonomy.js";
import type { Fact, RecalledFact, RecallReason, Topic } from "./types.js";

/** The facts a recall may draw on, by why they qualify; the query hits best first. */
export interface RecallCandidates {
  always: readonly Fact[];
  topic: readonly Fact[];
  query: readonly Fact[];
}

export interface SelectOptions {
  /** Include `sensitive` facts (default false). */
  includeSensitive: boolean;
}

function byCategoryThenConfidence(a: Fact, b: Fact): number {
  return (
    FACT_CATEGORIES.indexOf(a.category) - FACT_CATEGORIES.indexOf(b.category) ||
    b.confidence - a.confidence ||
    a.key.localeCompare(b.key)
  );
}

/**
 * The facts to put in a prompt: `always` ones, then the topic's, then the query's, each fact once.
 * Sensitive facts only on request. A secret_ref keeps its reference and loses any value, whatever
 * the store handed over: this is the last step before text reaches a model.
 */
export function selectRecalled(
  candidates: RecallCandidates,
  options: SelectOptions,
): RecalledFact[] {
  const seen = new Set<string>();
  const out: RecalledFact[] = [];
  const take = (facts: readonly Fact[], reason: RecallReason) => {
    for (const fact of facts) {
      if (seen.has(fact.factId)) continue;
      if (fact.sensitivity === "sensitive" && !options.includeSensitive) continue;
      seen.add(fact.factId);
      const value = fact.sensitivity === "secret_ref" ? null : fact.value;
      const reference = fact.sensitivity === "secret_ref" ? fact.reference : null;
      out.push({ ...fact, value, reference, tags: [...fact.tags], reason });
    }
  };
  take([...candidates.always].sort(byCategoryThenConfidence), "always");
  take([...candidates.topic].sort(byCategoryThenConfidence), "topic");
  take(candidates.query, "query");
  return out;
}

/** One line: prompt blocks are line-oriented, and a stray newline would start a fake entry. */
function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ").trim();
}

function renderFact(fact: RecalledFact): string {
  const head = `- [${fact.category}] ${oneLine(fact.key)}`;
  if (fact.sensitivity !== "secret_ref") return `${head}: ${oneLine(fact.value ?? "")}`;
  return fact.reference === null
    ? `${head}: secret (reference withheld: the stored value is not a reference)`
    : `${head}: secret kept at ${fact.reference} (reference only; the value is not inlined)`;
}

function renderTopic(topic: Topic): string[] {
  const lines = [`## Topic: ${oneLine(topic.title)} (${topic.status})`];
  if (topic.summaryShort !== "") lines.push(`Summary: ${oneLine(topic.summaryShort)}`);
  if (topic.summaryLong !== "") lines.push("", topic.summaryLong.trim(), "");
  if (topic.openLoops.length > 0) {
    lines.push("Open loops:", ...topic.openLoops.map((loop) => `- ${oneLine(loop)}`));
  }
  if (topic.labels.length > 0) lines.push(`Labels: ${topic.labels.join(", ")}`);
  return lines;
}

/** The topic and facts as a Markdown block for a system prompt; empty when there is neither. */
export function renderRecall(topic: Topic | null, facts: readonly RecalledFact[]): string {
  const lines: string[] = [];
  if (topic) lines.push(...renderTopic(topic));
  if (facts.length > 0) {
    if (lines.length > 0) lines.push("");
    lines.push("## Facts", ...facts.map(renderFact));
  }
  return lines.join("\n").replace(/\n{3,}/g, "\n\n");
}
