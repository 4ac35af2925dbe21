#!/usr/bin/env node
// Static bans: runtime code must not write legacy file stores. Legacy JSON/JSONL files are
// migration inputs only, read by src/doctor/. A runtime source file fails the check when it names
// a legacy store in a string literal and also calls a file-writing API. An explicit export path
// may opt out on its line (or the line above) with `check-bans: allow <reason>`.
//
// Usage: node scripts/check-bans.mjs [projectRoot]   (exit 1 and a file:line list on violations)
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";

const BANNED = [
  /sessions\.json/,
  /\.jsonl\b/,
  /\bjobs\.json/,
  /jobs-state\.json/,
  /\bruns\.json/,
  /\.lock\b/,
  /\.acp-stream\.jsonl/,
  /event-ledger\.json/,
  /device-pair-notify\.json/,
  /(devices|nodes)\/(pending|paired|bootstrap)\.json/,
  /identity\/device(-auth)?\.json/,
  /(web-push-subscriptions|vapid-keys|apns-registrations)\.json/,
  /session-toggles\.json/,
  /current-conversations\.json/,
  /restart-sentinel\.json/,
  /thread-bindings[^"'`]*\.json/,
  /plugins\/installs\.json/,
  /plugin-binding-approvals\.json/,
  /cache\/[^"'`]*\.json/,
  /settings\/(voicewake|voicewake-routing|tts)\.json/,
  /descriptor\.json/,
  /tasks\/(runs|flows\/registry)\.sqlite/,
  /plugin-state\/state\.sqlite/,
];

const WRITE_CALL =
  /\b(writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream|rename|renameSync|copyFile|copyFileSync|cpSync|truncate|truncateSync|symlink|symlinkSync|link|linkSync|open|openSync)\s*\(/;
const STRING_LITERAL = /(["'`])((?:\\.|(?!\1)[^\\])*)\1/g;
const ALLOW = /check-bans:\s*allow\s+\S/;

function isRuntimeSource(rel) {
  if (!rel.endsWith(".ts") || rel.endsWith(".d.ts")) return false;
  if (/\.test\.ts$/.test(rel) || rel.includes("/test-support/")) return false;
  return !rel.startsWith("src/doctor/");
}

function* walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) yield* walk(full);
    else yield full;
  }
}

export function findViolations(root) {
  const violations = [];
  for (const file of walk(join(root, "src"))) {
    const rel = relative(root, file).split(sep).join("/");
    if (!isRuntimeSource(rel)) continue;
    const lines = readFileSync(file, "utf8").split("\n");
    if (!lines.some((line) => WRITE_CALL.test(line))) continue;
    lines.forEach((line, index) => {
      if (ALLOW.test(line) || (index > 0 && ALLOW.test(lines[index - 1]))) return;
      for (const match of line.matchAll(STRING_LITERAL)) {
        const banned = BANNED.find((pattern) => pattern.test(match[2]));
        if (banned) {
          violations.push(
            `${rel}:${index + 1}: legacy store ${JSON.stringify(match[2])} in a file that writes files`,
          );
          break;
        }
      }
    });
  }
  return violations;
}

const root = process.argv[2] ?? process.cwd();
const violations = findViolations(root);
if (violations.length > 0) {
  process.stderr.write(
    `check:bans: runtime code must not write legacy state files (only src/doctor/ reads them):\n${violations.map((v) => `  ${v}`).join("\n")}\n`,
  );
  process.exit(1);
}
process.stdout.write("check:bans: no runtime writes to legacy state paths\n");
