import { describe, expect, it } from "vitest";
import { collectGarbage } from "../gc/collect-garbage.js";
import { openStateHome } from "../home.js";
import { useTempDirs } from "../test-support/temp-dir.js";
import { openControlPlane } from "./open-control-plane.js";

const tempDir = useTempDirs();

describe("a lapsed agent lease and gc", () => {
  it("keeps the lease row through gc, so the next owner's epoch still grows", async () => {
    const dir = tempDir();
    const cp = await openControlPlane({ home: dir });
    try {
      expect(await cp.leases.acquire("main", "host-a", 1)).toMatchObject({ epoch: 1 });
      await new Promise((resolve) => setTimeout(resolve, 10));
      const home = openStateHome({ home: dir });
      collectGarbage(home);
      const rows = home.db
        .prepare<{ epoch: number }>("SELECT epoch FROM agent_leases WHERE agent_id = 'main'")
        .all();
      home.close();
      expect(rows).toEqual([{ epoch: 1 }]);
      expect(await cp.leases.acquire("main", "host-b", 60_000)).toMatchObject({ epoch: 2 });
    } finally {
      await cp.close();
    }
  });
});
