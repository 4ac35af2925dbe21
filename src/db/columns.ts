/**
 * Declares the column list of a row type so that a test can compare it with the table that the
 * committed `.sql` creates: the list must name every key of `Row` and nothing else.
 *
 *   const KV_COLUMNS = columnsOf<KvRow>()("scope", "key", "value_json", "updated_at");
 */
export function columnsOf<Row>() {
  return <const Names extends readonly (keyof Row & string)[]>(
    ...names: Names & (Exclude<keyof Row, Names[number]> extends never ? unknown : never)
  ): Names => names;
}
