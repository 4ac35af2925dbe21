import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { StateError } from "../db/errors.js";

const PACKAGE = "@flydotio/litestream-linux-x64";

/**
 * The Litestream binary (v0.3.13) of the optional dependency. It exists for linux-x64 only, so
 * elsewhere a cluster home cannot replicate and says so instead of failing on spawn.
 */
export function litestreamBinary(): string {
  let path: string | undefined;
  try {
    const manifest = createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`);
    path = join(dirname(manifest), "litestream");
  } catch {
    path = undefined;
  }
  if (path === undefined || !existsSync(path)) {
    throw new StateError(
      "E_UNSUPPORTED",
      `cluster mode replicates agent databases with Litestream, whose binary (${PACKAGE}) is not installed: it ships for linux-x64 only (this is ${process.platform}-${process.arch})`,
      { details: { package: PACKAGE, platform: process.platform, arch: process.arch } },
    );
  }
  return path;
}
