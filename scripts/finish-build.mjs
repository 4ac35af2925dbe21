// After tsc: copy the committed schema files next to the compiled code (the migration runner
// finds them beside itself, in src/ under tests and in dist/ once built), the dashboard's static
// files likewise (the server serves the web/ directory beside its own), and make the CLI runnable.
import { chmodSync, cpSync } from "node:fs";

cpSync("src/db/schema", "dist/db/schema", { recursive: true });
cpSync("src/web", "dist/web", { recursive: true });
chmodSync("dist/cli/main.js", 0o755);
