import { StateError } from "../../db/errors.js";

/**
 * How a session list can be ordered. `updated` (the default) is the row's updated_at; `activity`
 * is `lastActivityAt`, else `lastInteractionAt`, else updated_at; the others are entry fields.
 * Every order is descending (newest first; text Z to A by UTF-8 bytes, entries without the field
 * last), ties broken by updated_at then key, both descending.
 */
export const SESSION_SORT_KEYS = Object.freeze([
  "updated",
  "activity",
  "status",
  "label",
  "channel",
  "model",
  "parent",
] as const);

export type SessionSortKey = (typeof SESSION_SORT_KEYS)[number];

/** Text filters: the entry field (see 0011_session_columns.sql for fallbacks) equals the value. */
export const SESSION_TEXT_FILTERS = Object.freeze([
  "status",
  "label",
  "channel",
  "model",
  "parentSessionKey",
] as const);

export type SessionTextFilter = (typeof SESSION_TEXT_FILTERS)[number];
export type SessionFlagFilter = "archived" | "pinned";
export type SessionColumnFilter = SessionTextFilter | SessionFlagFilter;

/** Column and index of each filter, most selective first: the first one given picks the index. */
const FILTERS: ReadonlyArray<readonly [SessionColumnFilter, string, string]> = [
  ["parentSessionKey", "parent_session_key", "session_entries_by_parent"],
  ["label", "label", "session_entries_by_label"],
  ["model", "model", "session_entries_by_model"],
  ["channel", "channel", "session_entries_by_channel"],
  ["status", "status", "session_entries_by_status"],
  ["pinned", "pinned", "session_entries_by_pinned"],
  ["archived", "archived", "session_entries_by_archived"],
];

const SORTS: Readonly<Record<Exclude<SessionSortKey, "updated">, readonly [string, string]>> = {
  activity: ["last_activity_at", "session_entries_by_activity"],
  status: ["status", "session_entries_by_status"],
  label: ["label", "session_entries_by_label"],
  channel: ["channel", "session_entries_by_channel"],
  model: ["model", "session_entries_by_model"],
  parent: ["parent_session_key", "session_entries_by_parent"],
};

/** The columns a list reads: never the generated ones, which would parse every entry's JSON. */
export const ENTRY_COLUMNS = "session_key, entry_json, version, updated_at, conversation_id";

export function checkSort(sort: unknown): SessionSortKey {
  if (sort === undefined) return "updated";
  if (typeof sort !== "string" || !(SESSION_SORT_KEYS as readonly string[]).includes(sort)) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `unknown session sort ${JSON.stringify(String(sort))}; expected one of ${SESSION_SORT_KEYS.join(", ")}`,
    );
  }
  return sort as SessionSortKey;
}

/**
 * The statement of one list shape: which filters are given, the sort, and whether a cursor bounds
 * it. INDEXED BY pins the index that serves the order: left to itself, SQLite prefers the
 * primary-key range of a prefix and sorts every match, ~70 KB of entry_json each, in a temp B-tree.
 * A sort by `updated` takes the index of its most selective filter, whose equality leaves the rest
 * already in (updated_at, session_key) order. Tests on columns the index holds (the key prefix,
 * the filter) read only the index entry, so skipped rows are never loaded.
 */
export function filteredListSql(
  filters: readonly SessionColumnFilter[],
  sort: SessionSortKey,
  after: boolean,
): string {
  const chosen = FILTERS.filter(([name]) => filters.includes(name));
  const [sortColumn, index] =
    sort === "updated" ? [undefined, chosen[0]?.[2] ?? "session_entries_updated"] : SORTS[sort];
  const keys =
    sortColumn === undefined ? "updated_at, session_key" : `${sortColumn}, updated_at, session_key`;
  const bound =
    sortColumn === undefined ? "(@afterAt, @afterKey)" : "(@afterValue, @afterAt, @afterKey)";
  const order = keys
    .split(", ")
    .map((key) => `${key} DESC`)
    .join(", ");
  return `SELECT ${ENTRY_COLUMNS}${sortColumn === undefined ? "" : `, ${sortColumn} AS sort_value`}
    FROM session_entries INDEXED BY ${index}
    WHERE updated_at >= @since
      AND session_key >= @prefix AND (@upper IS NULL OR session_key < @upper)
      AND (@conversation IS NULL OR conversation_id = @conversation)
      ${chosen.map(([name, column]) => `AND ${column} = @${name}`).join(" ")}
      ${after ? `AND (${keys}) < ${bound}` : ""}
    ORDER BY ${order}
    LIMIT @limit`;
}

const MAX_FILTER_LENGTH = 512;
const LONE_SURROGATE = /\p{Surrogate}/u;

function checkText(name: string, value: unknown): string {
  if (
    typeof value !== "string" ||
    value.length === 0 ||
    value.length > MAX_FILTER_LENGTH ||
    LONE_SURROGATE.test(value)
  ) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `session list filter ${name} must be well-formed text of 1 to ${MAX_FILTER_LENGTH} characters`,
    );
  }
  return value;
}

/** The bind parameters of the column filters given, booleans as the 0/1 the columns hold. */
export function checkColumnFilters(
  options: Partial<Record<SessionColumnFilter, unknown>>,
): Record<string, string | number> {
  const params: Record<string, string | number> = {};
  for (const name of SESSION_TEXT_FILTERS) {
    if (options[name] !== undefined) params[name] = checkText(name, options[name]);
  }
  for (const name of ["archived", "pinned"] as const) {
    const value = options[name];
    if (value === undefined) continue;
    if (typeof value !== "boolean") {
      throw new StateError("E_INVALID_ARGUMENT", `session list filter ${name} must be a boolean`);
    }
    params[name] = Number(value);
  }
  return params;
}

/** A page's position: the sort value (absent for `updated`), then updated_at and key. */
export interface ListPosition {
  sort: SessionSortKey;
  value?: string | number;
  updatedAt: number;
  key: string;
}

export function encodeCursor({ sort, value, updatedAt, key }: ListPosition): string {
  // `updated` keeps the two-element form that earlier releases handed out.
  const parts = sort === "updated" ? [updatedAt, key] : [sort, value, updatedAt, key];
  return Buffer.from(JSON.stringify(parts)).toString("base64url");
}

function positionOf(value: unknown): ListPosition | undefined {
  if (!Array.isArray(value)) return undefined;
  const [sort, sortValue, updatedAt, key] =
    value.length === 2 ? ["updated", undefined, ...value] : value;
  const valueOk =
    sort === "updated"
      ? value.length === 2
      : value.length === 4 &&
        (sort === "activity" ? Number.isSafeInteger(sortValue) : typeof sortValue === "string");
  if (!valueOk || !Number.isSafeInteger(updatedAt) || typeof key !== "string") return undefined;
  return { sort, value: sortValue, updatedAt, key };
}

export function decodeCursor(cursor: unknown, sort: SessionSortKey, show: string): ListPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(String(cursor), "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  const position = typeof cursor === "string" ? positionOf(value) : undefined;
  // Node's base64 decoder skips characters it does not know; only the exact encoding passes.
  if (!position || encodeCursor(position) !== cursor) {
    throw new StateError("E_INVALID_ARGUMENT", `malformed session list cursor ${show}`);
  }
  if (position.sort !== sort) {
    throw new StateError(
      "E_INVALID_ARGUMENT",
      `session list cursor ${show} belongs to sort "${position.sort}", not "${sort}"`,
    );
  }
  return position;
}
