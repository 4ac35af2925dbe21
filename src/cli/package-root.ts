import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The installed package's root (where `package.json` and `examples/` are), from src/ or dist/. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      const { name } = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string };
      if (name === "agentstate") return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error("cannot find the agentstate package root");
    dir = parent;
  }
}
