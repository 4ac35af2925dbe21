import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { FACT_CATEGORIES, type FactSensitivity, RECALL_POLICIES } from "../../memory/taxonomy.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { createAgentStores } from "./agent-stores.js";

const tempDir = useTempDirs();
const KEY = "agent:main:main";
const BASE62 = [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"];
const WORDS = ["deploy", "staging", "billing", "vim", "coffee", "infra", "openai", "key", "token"];

const word = fc.constantFrom(...WORDS);
const tags = fc.uniqueArray(word, { maxLength: 3 });
const category = fc.constantFrom(...FACT_CATEGORIES);
const policy = fc.constantFrom(...RECALL_POLICIES);
/** A key-shaped secret: "sk-" and 24 to 48 base62 characters. */
const secret = fc
  .array(fc.constantFrom(...BASE62), { minLength: 24, maxLength: 48 })
  .map((chars) => `sk-${chars.join("")}`);

/** How a secret got into a secret_ref row: as the value, or dressed up as a reference. */
const secretValue = (s: string) =>
  fc.constantFrom(s, `env:${s}`, `keychain:openai/${s}`, `vault:kv/${s}`, `file:/run/${s}`);

const secretFact = fc.record({ key: fc.string({ minLength: 1, maxLength: 12 }), policy, tags });
const otherFact = fc.record({
  key: fc.string({ minLength: 1, maxLength: 12 }),
  value: fc.array(word, { minLength: 1, maxLength: 4 }).map((w) => w.join(" ")),
  category,
  policy,
  sensitivity: fc.constantFrom<FactSensitivity>("normal", "sensitive", "secret_ref"),
  tags,
});
const topic = fc.record({ labels: tags, loops: fc.array(word, { maxLength: 2 }) });

function open() {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const stores = createAgentStores(db, "main");
  const { sessionId } = stores.lifecycle.start(KEY);
  return { db, memory: stores.memory, sessionId };
}

describe("secret_ref facts in recall", () => {
  it("never put a key-shaped value in any output, in any mode", () => {
    const { db, memory, sessionId } = open();
    const { facts } = memory;
    const clear = () => db.exec("DELETE FROM facts; DELETE FROM topics;");
    const scenario = fc.record({
      secret,
      secretFacts: fc.array(secretFact, { minLength: 1, maxLength: 3 }),
      others: fc.array(otherFact, { maxLength: 8 }),
      topics: fc.array(topic, { maxLength: 3 }),
      active: fc.nat(3),
    });
    fc.assert(
      fc.property(scenario, fc.gen(), (s, gen) => {
        clear();
        s.secretFacts.forEach((f, i) => {
          const value = gen(secretValue, s.secret);
          const input = {
            scope: "agent",
            key: `secret-${i}-${f.key}`,
            category: "account" as const,
            sensitivity: "secret_ref" as const,
            recallPolicy: f.policy,
            tags: f.tags,
          };
          // The store refuses it, without repeating it …
          try {
            facts.upsert({ ...input, value });
            expect.unreachable();
          } catch (error) {
            expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
            expect(String((error as Error).message)).not.toContain(s.secret);
          }
          // … so it arrives the way a hand-edited or older row would: raw value, and indexed.
          const written = facts.upsert({ ...input, value: "env:PLACEHOLDER" });
          const { id } = db
            .prepare<{ id: number }>("UPDATE facts SET value = ? WHERE fact_id = ? RETURNING id")
            .get(value, written.factId) as { id: number };
          db.prepare("DELETE FROM facts_fts WHERE rowid = ?").run(id);
          db.prepare("INSERT INTO facts_fts (rowid, text) VALUES (?, ?)").run(id, value);
        });
        s.others.forEach((f, i) => {
          const value =
            f.sensitivity === "secret_ref" ? `env:${f.value.replace(/ /g, "_")}` : f.value;
          facts.upsert({
            scope: "user",
            key: `other-${i}-${f.key}`,
            category: f.category,
            value,
            sensitivity: f.sensitivity,
            recallPolicy: f.policy,
            tags: f.tags,
          });
        });
        const topicIds = s.topics.map(
          (t, i) =>
            memory.topics.create(sessionId, {
              title: `T${i}`,
              labels: t.labels,
              openLoops: t.loops,
            }).topicId,
        );
        const active = topicIds[s.active] ?? null;
        memory.switchTopic(sessionId, active);

        const body = s.secret.slice(3);
        const queries = [
          undefined,
          s.secret,
          `what is ${s.secret}?`,
          body,
          "sk",
          "key token openai",
        ];
        const outputs: unknown[] = [memory.recover(KEY), facts.list()];
        for (const query of queries) {
          for (const includeSensitive of [false, true]) {
            for (const topicId of [undefined, null, ...topicIds]) {
              const result = memory.recall({ sessionId, query, includeSensitive, topicId });
              outputs.push(result);
              // always-policy secrets are still recalled: as a (withheld) reference.
              const secretsIn = result.facts.filter((f) => f.key.startsWith("secret-"));
              for (const f of secretsIn) expect(f).toMatchObject({ value: null, reference: null });
            }
          }
        }
        const alwaysSecrets = s.secretFacts.filter((f) => f.policy === "always").length;
        const plain = memory.recall({ sessionId, topicId: null });
        expect(plain.facts.filter((f) => f.key.startsWith("secret-"))).toHaveLength(alwaysSecrets);
        for (const fact of facts.list()) outputs.push(facts.history(fact.factId));
        for (const output of outputs) {
          const json = JSON.stringify(output);
          expect(json).not.toContain(body);
          const text = (output as { text?: unknown } | undefined)?.text;
          if (typeof text === "string") expect(text).not.toContain(body);
        }
      }),
      { numRuns: 60 },
    );
    db.close();
  });
});
