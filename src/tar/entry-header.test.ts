import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../test-support/temp-dir.js";
import { tarEnd, tarEntryHeader, tarPadding } from "./entry-header.js";

const tempDir = useTempDirs();

describe("tarEntryHeader", () => {
  it("writes entries the system tar lists with their modes, owner 0, mtime and long names", () => {
    const mtime = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));
    const long = `${"d/".repeat(80)}é.txt`;
    const archive = join(tempDir(), "t.tar");
    writeFileSync(
      archive,
      Buffer.concat([
        tarEntryHeader({ path: "dir/", type: "Directory", size: 0, mode: 0o700, mtime }),
        tarEntryHeader({ path: long, type: "File", size: 3, mode: 0o600, mtime }),
        Buffer.from("abc"),
        tarPadding(3),
        tarEnd(),
      ]),
    );
    const listing = execFileSync("tar", ["--numeric-owner", "--full-time", "-tvf", archive], {
      encoding: "utf8",
      env: { ...process.env, TZ: "UTC" },
    });
    expect(listing.trim().split("\n")).toEqual([
      "drwx------ 0/0               0 2024-01-02 03:04:05 dir/",
      `-rw------- 0/0               3 2024-01-02 03:04:05 ${long}`,
    ]);
    expect(execFileSync("tar", ["-xOf", archive, long], { encoding: "utf8" })).toBe("abc");
  });
});
