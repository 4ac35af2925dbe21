// Test helpers: a small real home, and reading/rewriting archives entry by entry with the tar
// library, to build tampered and hostile archives from a genuine one.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { Header, Parser, type ReadEntry } from "tar";
import { openStateHome } from "../../home.js";

export interface RawEntry {
  path: string;
  body: Buffer;
  type?: "File" | "SymbolicLink" | "Link" | "Directory";
  linkpath?: string;
}

/** A home with a global kv entry, two agents with transcripts, a config file and a credential. */
export function makeHome(dir: string, events = 20): string {
  const path = join(dir, "home");
  const home = openStateHome({ home: path });
  try {
    home.kv.set("prefs", "theme", "dark");
    for (const agentId of ["main", "research"]) {
      home.agent(agentId).kv.set("notes", "n1", { agentId });
      for (let i = 0; i < events; i++) {
        home.transcripts.append(
          { agentId, sessionId: "s1" },
          {
            type: "message",
            message: { role: "user", content: [{ type: "text", text: `${agentId} says ${i}` }] },
          },
        );
      }
    }
  } finally {
    home.close();
  }
  writeFileSync(join(path, "config.json"), '{"gateway":{"port":1}}\n', { mode: 0o600 });
  mkdirSync(join(path, "credentials"), { mode: 0o700 });
  writeFileSync(join(path, "credentials", "token"), "secret\n", { mode: 0o600 });
  return path;
}

export function readEntries(file: string): RawEntry[] {
  const raw = readFileSync(file);
  const data = raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw;
  const entries: RawEntry[] = [];
  const parser = new Parser({ strict: true, zstd: false, brotli: false });
  parser.on("entry", (entry: ReadEntry) => {
    const chunks: Buffer[] = [];
    entry.on("data", (chunk: Buffer) => chunks.push(chunk));
    entry.on("end", () =>
      entries.push({
        path: entry.path,
        body: Buffer.concat(chunks),
        type: entry.type as RawEntry["type"],
        linkpath: entry.linkpath,
      }),
    );
  });
  parser.end(data);
  return entries;
}

export function encodeEntries(entries: readonly RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const size = entry.type === undefined || entry.type === "File" ? entry.body.length : 0;
    const header = new Header({
      path: entry.path,
      size,
      mode: 0o600,
      mtime: new Date(0),
      type: entry.type ?? "File",
      linkpath: entry.linkpath,
    });
    header.encode();
    blocks.push(header.block as Buffer);
    if (size > 0) blocks.push(entry.body, Buffer.alloc((512 - (size % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

export function writeEntries(file: string, entries: readonly RawEntry[], gzip = true): void {
  const tar = encodeEntries(entries);
  writeFileSync(file, gzip ? gzipSync(tar) : tar);
}

/** Rewrites `file` into `out` with `edit` applied to its entry list. */
export function rewrite(
  file: string,
  out: string,
  edit: (entries: RawEntry[]) => RawEntry[],
): string {
  writeEntries(out, edit(readEntries(file)));
  return out;
}

export function replaceBody(
  entries: RawEntry[],
  path: string,
  fn: (body: Buffer) => Buffer,
): RawEntry[] {
  return entries.map((entry) =>
    entry.path === path ? { ...entry, body: fn(Buffer.from(entry.body)) } : entry,
  );
}

/** What zlib writes at the start of every gzip member at level 1 (no name, no mtime, Unix). */
const MEMBER_HEADER = Buffer.from("1f8b0800000000000403", "hex");

/** How many gzip members `file` holds, counted by their headers (the archives are level 1). */
export function gzipMembers(file: string): number {
  const bytes = readFileSync(file);
  let count = 0;
  for (
    let at = bytes.indexOf(MEMBER_HEADER);
    at !== -1;
    at = bytes.indexOf(MEMBER_HEADER, at + 1)
  ) {
    count++;
  }
  return count;
}
