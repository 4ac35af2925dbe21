import fc from "fast-check";

/** Random 5-field expressions built from the syntax the parser accepts. */
export const cronExpressionArb = (() => {
  const field = (min: number, max: number, names: string[] = []) =>
    fc.oneof(
      fc.constant("*"),
      fc.integer({ min, max }).map(String),
      fc.integer({ min: 2, max: Math.max(2, Math.floor((max - min) / 2)) }).map((s) => `*/${s}`),
      fc
        .tuple(fc.integer({ min, max }), fc.integer({ min, max }))
        .map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
      fc
        .uniqueArray(fc.integer({ min, max }), { minLength: 2, maxLength: 4 })
        .map((v) => v.join(",")),
      ...(names.length ? [fc.constantFrom(...names)] : []),
    );
  return fc
    .tuple(
      field(0, 59),
      field(0, 23),
      field(1, 28),
      field(1, 12, ["JAN", "jun", "Dec"]),
      field(0, 7, ["MON", "fri", "Sun"]),
    )
    .map((fields) => fields.join(" "));
})();
