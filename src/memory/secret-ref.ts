import { StateError } from "../db/errors.js";

/** `scheme:locator`, e.g. env:OPENAI_API_KEY, keychain:openai/api-key, op://vault/item/field. */
const REFERENCE = /^[a-z][a-z0-9+.-]{0,31}:\S{1,500}$/;

// Shapes of well-known credentials. A reference never needs one of them to say where a secret is.
const CREDENTIAL_SHAPES = [
  /\b(?:sk|pk|rk)[-_][A-Za-z0-9_-]{12,}/,
  /\bgh[oprsu]_[A-Za-z0-9]{20,}/,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bglpat-[A-Za-z0-9_-]{16,}/,
  /\bxox[abeprs]-[A-Za-z0-9-]{10,}/,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/,
  /\bAIza[0-9A-Za-z_-]{30,}/,
  /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /\b[0-9a-fA-F]{32,}\b/,
];
const TOKEN = /[A-Za-z0-9+=_-]{20,}/g;

/**
 * True when `text` holds something shaped like a credential: a known key format, a long hex
 * string, or a long run mixing lower case, upper case and digits (environment variable names,
 * paths and item names do not mix all three over 20 characters).
 */
export function looksLikeCredential(text: string): boolean {
  if (CREDENTIAL_SHAPES.some((shape) => shape.test(text))) return true;
  for (const [token] of text.matchAll(TOKEN)) {
    if (/[a-z]/.test(token) && /[A-Z]/.test(token) && /\d/.test(token)) return true;
  }
  return false;
}

/**
 * The reference a secret_ref fact's stored value names, or null when the value is not a
 * reference or could be the secret itself. Recall renders only what this returns.
 */
export function parseSecretRef(value: string): string | null {
  return REFERENCE.test(value) && !looksLikeCredential(value) ? value : null;
}

/**
 * Refuses a secret_ref value that is not a plain reference. The message never repeats the
 * value: it may be the very secret that should not reach a log.
 */
export function checkSecretRef(value: string, where: string): string {
  if (parseSecretRef(value) === null) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `${where}: a secret_ref fact stores where the secret lives (env:NAME, keychain:service/account, vault:path, op://vault/item), not the secret; the value given is not such a reference or looks like a credential`,
      { details: { valueLength: value.length } },
    );
  }
  return value;
}
