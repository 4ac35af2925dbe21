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

const UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/**
 * A byte count written as people write one: `500MB` (powers of 1000), `2GiB` (powers of 1024),
 * `1.5 GB`, or a bare integer of bytes. Undefined when `text` is none of those.
 */
export function parseByteSize(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match) return undefined;
  const unit = (match[2] ?? "").toLowerCase();
  const factor = unit === "" ? 1 : UNITS[unit];
  if (factor === undefined) return undefined;
  const bytes = Math.floor(Number(match[1]) * factor);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}
