import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStateError } from "../db/errors.js";
import { checkSecretRef, looksLikeCredential, parseSecretRef } from "./secret-ref.js";

describe("parseSecretRef", () => {
  it("accepts references that say where a secret lives", () => {
    for (const ref of [
      "env:OPENAI_API_KEY",
      "keychain:openai/api-key",
      "op://Private/OpenAI/credential",
      "vault:secret/data/prod/db-password",
      "file:/run/secrets/db_password",
      "aws-sm:arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db",
    ]) {
      expect(parseSecretRef(ref), ref).toBe(ref);
    }
  });

  it("refuses secrets, secrets dressed as references, and non-references", () => {
    for (const value of [
      "sk-proj-4fJ9qLw2ZxT7bN1cVd8RkP3sY6uH0aEm",
      "env:sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
      "ghp_1234567890abcdefghijABCDEFGHIJ123456",
      "vault:kv/AKIAIOSFODNN7EXAMPLE",
      "keychain:eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
      "file:/tmp/0123456789abcdef0123456789abcdef",
      "env:Xy7pQ2mN9vB4kL8sT1wR6zC3",
      "hunter2",
      "env: OPENAI",
      "ENV:OPENAI",
      "",
    ]) {
      expect(parseSecretRef(value), value).toBeNull();
    }
  });

  it("flags every sk- key of 12+ base62 characters, wherever it sits", () => {
    const base62 = fc.constantFrom(
      ..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    );
    const key = fc.array(base62, { minLength: 12, maxLength: 64 }).map((c) => `sk-${c.join("")}`);
    fc.assert(
      fc.property(key, fc.constantFrom("", "env:", "keychain:a/", "vault:kv/"), (k, prefix) => {
        expect(looksLikeCredential(prefix + k)).toBe(true);
        expect(parseSecretRef(prefix + k)).toBeNull();
      }),
    );
  });

  it("names no value in its error", () => {
    const secret = "sk-live-9Qw8Er7Ty6Ui5Op4As3Df2Gh";
    try {
      checkSecretRef(secret, "fact agent/openai");
      expect.unreachable();
    } catch (error) {
      expect(isStateError(error, "E_INVALID_ARGUMENT")).toBe(true);
      expect(JSON.stringify((error as { toJSON(): unknown }).toJSON())).not.toContain(secret);
    }
  });
});
