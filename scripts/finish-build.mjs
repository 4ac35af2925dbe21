// After tsc: copy the committed schema files next to the compiled code (the migration runner
// finds them beside itself, in src/ under tests and in dist/ once built) and make the CLI runnable.
import { chmodSync, cpSync } from "node:fs";

cpSync("src/db/schema", "dist/db/schema", { recursive: true });
chmodSync("dist/cli/main.js", 0o755);
