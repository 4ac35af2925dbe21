/**
 * `text` as an SQL string literal, for the statements that take no bound parameters (pragma
 * arguments, VACUUM INTO's file name).
 */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
