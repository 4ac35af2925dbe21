import { describe, expect, it } from "vitest";
import { rejectUnknownOptions } from "./options.js";

describe("rejectUnknownOptions", () => {
  it("names the first unknown key and the method, whether the allowed names are a list or a set", () => {
    expect(() => rejectUnknownOptions({ limit: 1, limt: 2 }, ["limit"], "list")).toThrow(
      new TypeError("Unknown option for list: limt"),
    );
    expect(() => rejectUnknownOptions({ creat: true }, new Set(["create"]), "open")).toThrow(
      new TypeError("Unknown option for open: creat"),
    );
    expect(() => rejectUnknownOptions({ limit: 1 }, new Set(["limit"]), "list")).not.toThrow();
    expect(() => rejectUnknownOptions({}, [], "list")).not.toThrow();
  });

  it("refuses what is not an options object", () => {
    for (const value of [null, undefined, 3, "limit", ["limit"]]) {
      expect(() => rejectUnknownOptions(value, ["limit"], "list"), String(value)).toThrow(
        new TypeError("Expected an options object for list"),
      );
    }
  });

  it("words the message as the caller's public API promised", () => {
    expect(() =>
      rejectUnknownOptions(
        { idempotent: true },
        ["verbatim"],
        "append",
        (key) => `Unknown append option: ${key}`,
      ),
    ).toThrow(new TypeError("Unknown append option: idempotent"));
  });
});
