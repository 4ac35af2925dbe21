/** Plain-text tables and sizes for the CLI. JSON output goes through `printJson`. */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export interface Column<Row> {
  header: string;
  value: (row: Row) => string | number;
  align?: "left" | "right";
}

export function renderTable<Row>(rows: readonly Row[], columns: readonly Column<Row>[]): string {
  const cells = rows.map((row) => columns.map((column) => String(column.value(row))));
  const widths = columns.map((column, i) =>
    Math.max(column.header.length, ...cells.map((line) => (line[i] ?? "").length)),
  );
  const format = (line: readonly string[]): string =>
    line
      .map((cell, i) => {
        const width = widths[i] ?? 0;
        return columns[i]?.align === "right" ? cell.padStart(width) : cell.padEnd(width);
      })
      .join("  ")
      .trimEnd();
  return [format(columns.map((c) => c.header)), ...cells.map(format)].join("\n");
}
