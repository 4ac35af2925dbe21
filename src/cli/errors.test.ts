import { describe, expect, it } from "vitest";
import { StateError } from "../db/errors.js";
import { exitCodeFor } from "./errors.js";

describe("exit codes", () => {
  it("a lost or foreign agent lease exits 5, like a conflict: retrying on this host cannot help", () => {
    for (const code of ["E_LEASE_LOST", "E_NOT_OWNER", "E_CONFLICT"] as const) {
      expect(exitCodeFor(new StateError(code, "x")), code).toBe(5);
    }
  });
});
