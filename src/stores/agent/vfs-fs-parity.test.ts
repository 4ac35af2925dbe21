import * as fs from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../db/database.js";
import { isStateError } from "../../db/errors.js";
import { useTempDirs } from "../../test-support/temp-dir.js";
import { VFS_CHUNK_BYTES } from "../../vfs/chunks.js";
import { vfsErrnoOf } from "../../vfs/errors.js";
import { VfsStore, type VirtualAgentFs } from "./vfs-store.js";

/**
 * The same random sequence of operations on a VirtualAgentFs and on a real directory must give
 * the same outcome per operation (success, or the same POSIX errno) and the same tree and bytes.
 */

const tempDir = useTempDirs();

type Op =
  | { kind: "write" | "append"; path: string; size: number; seed: number }
  | { kind: "mkdir"; path: string; recursive: boolean }
  | { kind: "rm"; path: string; recursive: boolean; force: boolean }
  | { kind: "rename" | "copy"; path: string; dest: string };

const segment = fc.constantFrom("a", "b", "c");
// Shallow paths over three names: operations collide often, so the error paths get exercised.
const path = fc
  .oneof(
    { weight: 3, arbitrary: fc.tuple(segment) },
    { weight: 3, arbitrary: fc.tuple(segment, segment) },
    { weight: 1, arbitrary: fc.tuple(segment, segment, segment) },
  )
  .map((parts) => parts.join("/"));
const size = fc.oneof(
  { weight: 8, arbitrary: fc.nat(40) },
  { weight: 1, arbitrary: fc.constant(VFS_CHUNK_BYTES + 3) },
);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom("write", "append"), path, size, seed: fc.nat() }),
  fc.record({ kind: fc.constant("mkdir"), path, recursive: fc.boolean() }),
  fc.record({ kind: fc.constant("mkdir"), path, recursive: fc.constant(true) }),
  fc.record({ kind: fc.constant("rm"), path, recursive: fc.boolean(), force: fc.boolean() }),
  fc.record({ kind: fc.constantFrom("rename", "copy"), path, dest: path }),
) as fc.Arbitrary<Op>;

function bytes(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) out[i] = (seed + i * 31) & 0xff;
  return out;
}

const NODE_CODES: Record<string, string> = {
  ERR_FS_EISDIR: "EISDIR",
  ERR_FS_CP_EINVAL: "EINVAL",
  ERR_FS_CP_EEXIST: "EEXIST",
};

function outcome(fn: () => unknown): string {
  try {
    fn();
    return "ok";
  } catch (error) {
    if (isStateError(error)) return vfsErrnoOf(error) ?? error.code;
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    return NODE_CODES[code] ?? code;
  }
}

function posixError(code: string): Error {
  return Object.assign(new Error(code), { code });
}

/** `cp -R` to a new name, with the VFS copy's preconditions spelled out on the real fs. */
/**
 * `rmSync`, with force ignoring a path below a file as Node 24 (and `rm -f`) does: Node 20 reports
 * ENOTDIR there. The oracle is then the same on both runtimes the suite runs on.
 */
function diskRm(full: string, force: boolean, recursive: boolean): void {
  try {
    fs.rmSync(full, { recursive, force });
  } catch (error) {
    if (!(force && (error as NodeJS.ErrnoException).code === "ENOTDIR")) throw error;
  }
}

function diskCopy(root: string, from: string, to: string): void {
  const source = fs.lstatSync(join(root, from));
  const parent = fs.statSync(join(root, to, ".."));
  if (!parent.isDirectory()) throw posixError("ENOTDIR");
  if (from === to || to.startsWith(`${from}/`)) throw posixError("EINVAL");
  if (fs.existsSync(join(root, to))) throw posixError("EEXIST");
  fs.cpSync(join(root, from), join(root, to), { recursive: source.isDirectory() });
}

function onDisk(root: string, o: Op): unknown {
  const full = join(root, o.path);
  switch (o.kind) {
    case "write":
      return fs.writeFileSync(full, bytes(o.size, o.seed));
    case "append":
      return fs.appendFileSync(full, bytes(o.size, o.seed));
    case "mkdir":
      return fs.mkdirSync(full, { recursive: o.recursive });
    case "rm":
      return diskRm(full, o.force, o.recursive);
    case "rename":
      return fs.renameSync(full, join(root, o.dest));
    case "copy":
      return diskCopy(root, o.path, o.dest);
  }
}

function inVfs(vfs: VirtualAgentFs, o: Op): unknown {
  switch (o.kind) {
    case "write":
      return vfs.writeFile(o.path, bytes(o.size, o.seed));
    case "append":
      return vfs.appendFile(o.path, bytes(o.size, o.seed));
    case "mkdir":
      return vfs.mkdir(o.path, { recursive: o.recursive });
    case "rm":
      return vfs.rm(o.path, { recursive: o.recursive, force: o.force });
    case "rename":
      return vfs.rename(o.path, o.dest);
    case "copy":
      return vfs.copy(o.path, o.dest);
  }
}

function diskTree(root: string, dir = ""): string[] {
  const lines: string[] = [];
  for (const name of fs.readdirSync(join(root, dir)).sort()) {
    const rel = dir === "" ? name : `${dir}/${name}`;
    if (fs.lstatSync(join(root, rel)).isDirectory()) {
      lines.push(`d /${rel}`, ...diskTree(root, rel));
    } else {
      lines.push(`f /${rel} ${fs.readFileSync(join(root, rel)).toString("base64")}`);
    }
  }
  return lines;
}

function vfsTree(vfs: VirtualAgentFs): string[] {
  return vfs
    .list("/")
    .map((s) =>
      s.kind === "directory"
        ? `d ${s.path}`
        : `f ${s.path} ${vfs.readFile(s.path).toString("base64")}`,
    );
}

describe("VirtualAgentFs behaves like a real directory", () => {
  it("random operation sequences give the same outcomes, tree and bytes", () => {
    const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
    const store = new VfsStore(db);
    const base = tempDir();
    let run = 0;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 30 }), (ops) => {
        run++;
        const vfs = store.namespace(`run${run}`);
        const root = join(base, `run${run}`);
        fs.mkdirSync(root);
        const outcomes = ops.map((o) => [
          outcome(() => onDisk(root, o)),
          outcome(() => inVfs(vfs, o)),
        ]);
        expect(outcomes.map(([, v]) => v)).toEqual(outcomes.map(([d]) => d));
        expect(vfsTree(vfs)).toEqual(diskTree(root));
        fs.rmSync(root, { recursive: true });
      }),
      { numRuns: 400 },
    );
    db.close();
  });
});
