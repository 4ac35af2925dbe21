import { describe, expect, it } from "vitest";
import { simulatedClock } from "../stores/global/test-support/global-db.js";
import { BACKENDS, useControlPlanes } from "./test-support/control-planes.js";

// Expired rows leave the disk on both backends. The oracle is the rows the test wrote with
// their TTLs, counted back through a connection of the test's own.

const open = useControlPlanes();

describe.each(BACKENDS)("control plane on %s: sweepExpired", (backend) => {
  it("deletes the rows whose TTL has run out, table by table, and keeps the others", async () => {
    const clock = simulatedClock();
    const { cp, count } = await open(backend, { clock: clock.now });
    await cp.pluginState.set("p", "ns", "short", 1, { ttlMs: 100 });
    await cp.pluginState.set("p", "ns", "long", 2, { ttlMs: 10_000 });
    await cp.pluginState.set("p", "ns", "forever", 3);
    await cp.pluginBlobs.set("p", "ns", "short", Buffer.from("x"), { ttlMs: 100 });
    await cp.pluginBlobs.set("p", "ns", "forever", Buffer.from("y"));
    await cp.media.put("sub", "short", Buffer.from("z"), { ttlMs: 50 });
    await cp.media.put("sub", "kept", Buffer.from("w"));
    clock.advance(99);
    expect((await cp.sweepExpired()).total).toBe(1); // the media row, past its 50 ms
    clock.advance(1); // exactly at the 100 ms entries' expiry: swept (expires_at <= now)
    const report = await cp.sweepExpired();
    expect(report.tables).toMatchObject({
      plugin_state_entries: 1,
      plugin_blob_entries: 1,
      media_blobs: 0,
    });
    expect(report.total).toBe(Object.values(report.tables).reduce((a, b) => a + b, 0));
    expect(await count("plugin_state_entries")).toBe(2);
    expect(await count("plugin_blob_entries")).toBe(1);
    expect(await count("media_blobs")).toBe(1);
    // A given time: the long-lived entry too.
    expect((await cp.sweepExpired(clock.now() + 10_000)).tables.plugin_state_entries).toBe(1);
    expect(await cp.pluginState.get("p", "ns", "forever")).toBe(3);
    await expect(cp.sweepExpired(-1)).rejects.toMatchObject({ code: "E_INVALID_ARGUMENT" });
  });
});
