import fc from "fast-check";

/** One field: a star, a value, a stepped star, a range (maybe stepped), a list, or one of `names`. */
function field(min: number, max: number, names: string[] = []) {
  const value = fc.integer({ min, max });
  const range = fc.tuple(value, value).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`);
  return fc.oneof(
    fc.constant("*"),
    value.map(String),
    fc.integer({ min: 2, max: Math.max(2, Math.floor((max - min) / 2)) }).map((s) => `*/${s}`),
    range,
    fc.tuple(range, fc.integer({ min: 2, max: 5 })).map(([r, s]) => `${r}/${s}`),
    fc.uniqueArray(value, { minLength: 2, maxLength: 4 }).map((v) => v.join(",")),
    ...(names.length ? [fc.constantFrom(...names)] : []),
  );
}

/** Random 5-field expressions: ranges, steps, lists and names, nothing croner-specific. */
export const cronExpressionArb = fc
  .tuple(
    field(0, 59),
    field(0, 23),
    field(1, 28),
    field(1, 12, ["JAN", "jun", "Dec"]),
    field(0, 7, ["MON", "fri", "Sun"]),
  )
  .map((fields) => fields.join(" "));

/** Day of month with croner's extras: last day, nearest weekday, `?`. */
const dayOfMonthArb = fc.oneof(
  { weight: 4, arbitrary: field(1, 31) },
  { weight: 1, arbitrary: fc.constantFrom("L", "LW", "?", "1,L") },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 31 }).map((d) => `${d}W`) },
);

/** Day of week with croner's extras: nth and last weekday of the month, name ranges, `?`. */
const dayOfWeekArb = fc.oneof(
  { weight: 4, arbitrary: field(0, 7, ["MON", "fri", "Sun", "MON-FRI", "sat-sun"]) },
  { weight: 1, arbitrary: fc.constant("?") },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom("0", "1", "5", "6", "FRI"), fc.constantFrom("1", "2", "3", "5", "L"))
      .map(([day, nth]) => `${day}#${nth}`),
  },
);

/**
 * Random expressions in croner's syntax: 5 fields, or 6 with leading seconds, every day-field
 * extra (`L`, `W`, `#`, `?`) and names; now and then a nickname.
 */
export const cronerExpressionArb = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .tuple(
        fc.option(field(0, 59), { freq: 3 }),
        field(0, 59),
        field(0, 23),
        dayOfMonthArb,
        field(1, 12, ["JAN", "jun", "Dec", "mar-oct"]),
        dayOfWeekArb,
      )
      .map(([seconds, ...rest]) => (seconds === null ? rest : [seconds, ...rest]).join(" ")),
  },
  { weight: 1, arbitrary: fc.constantFrom("@hourly", "@daily", "@weekly", "@monthly", "@yearly") },
);
