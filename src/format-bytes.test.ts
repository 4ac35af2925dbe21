import { describe, expect, it } from "vitest";
import { parseByteSize } from "./format-bytes.js";

describe("parseByteSize", () => {
  it("reads decimal and binary units, case-insensitive, and bare bytes", () => {
    expect(parseByteSize("500MB")).toBe(500_000_000);
    expect(parseByteSize("2GiB")).toBe(2 * 1024 ** 3);
    expect(parseByteSize("1.5 gb")).toBe(1_500_000_000);
    expect(parseByteSize("4096")).toBe(4096);
    expect(parseByteSize("10kib")).toBe(10_240);
  });

  it("refuses anything else", () => {
    for (const text of ["", "lots", "5XB", "-1GB", "1e9", "GB"])
      expect(parseByteSize(text)).toBeUndefined();
  });
});
