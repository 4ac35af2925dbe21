import { StateError } from "../db/errors.js";

/** Where a topic stands: worked on, set aside to come back to, or done. */
export const TOPIC_STATUSES = ["open", "paused", "closed"] as const;
export type TopicStatus = (typeof TOPIC_STATUSES)[number];

export const FACT_CATEGORIES = [
  "background",
  "environment",
  "account",
  "security",
  "preference",
  "project",
  "decision",
  "constraint",
] as const;
export type FactCategory = (typeof FACT_CATEGORIES)[number];

/**
 * `secret_ref`: the fact says where a secret lives (env:NAME, keychain:…) and recall renders only
 * that reference. `sensitive`: recalled only when the caller opts in.
 */
export const FACT_SENSITIVITIES = ["normal", "sensitive", "secret_ref"] as const;
export type FactSensitivity = (typeof FACT_SENSITIVITIES)[number];

/**
 * `always`: in every recall. `topic_bound`: when a tag matches the topic's labels (or the fact
 * came from the topic). `on_demand`: only when a recall query matches it.
 */
export const RECALL_POLICIES = ["always", "topic_bound", "on_demand"] as const;
export type RecallPolicy = (typeof RECALL_POLICIES)[number];

export const MAX_LABELS = 32;
export const MAX_LABEL_LENGTH = 64;

/** Narrows `value` to one of `values`, else E_INVALID_ARGUMENT listing them. */
export function checkEnum<T extends string>(what: string, value: unknown, values: readonly T[]): T {
  if (typeof value !== "string" || !(values as readonly string[]).includes(value)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${what} must be one of ${values.join(", ")}, got ${JSON.stringify(value)?.slice(0, 80)}`,
    );
  }
  return value as T;
}

/**
 * Labels and tags compare case-insensitively and without surrounding space: a fact tagged
 * "Infra" must reach a topic labelled "infra". Duplicates fold; order is kept.
 */
export function normalizeLabels(what: string, labels: unknown): string[] {
  if (!Array.isArray(labels)) {
    throw new StateError("E_INVALID_ARGUMENT", `${what} must be an array of strings`);
  }
  const out = new Set<string>();
  for (const label of labels) {
    const text = typeof label === "string" ? label.trim().toLowerCase() : "";
    if (text === "" || text.length > MAX_LABEL_LENGTH || /[\p{Cc}\p{Surrogate}]/u.test(text)) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `each of ${what} must be printable text of 1 to ${MAX_LABEL_LENGTH} characters, got ${JSON.stringify(label)?.slice(0, 80)}`,
      );
    }
    out.add(text);
  }
  if (out.size > MAX_LABELS) {
    throw new StateError("E_INVALID_ARGUMENT", `${what} holds ${out.size}; at most ${MAX_LABELS}`);
  }
  return [...out];
}
