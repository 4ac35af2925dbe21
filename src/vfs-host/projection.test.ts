import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, sep } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../db/database.js";
import { VfsStore, type VirtualAgentFs } from "../stores/agent/vfs-store.js";
import { modeOf, useTempDirs } from "../test-support/temp-dir.js";
import { VFS_CHUNK_BYTES } from "../vfs/chunks.js";
import { withProjection } from "./projection.js";

const tempDir = useTempDirs();

function setup(): { vfs: VirtualAgentFs; close: () => void } {
  const db = openDatabase({ path: join(tempDir(), "agent.sqlite"), role: "agent" });
  const vfs = new VfsStore(db).namespace();
  vfs.mkdir("/proj/olddir");
  vfs.writeFile("/proj/olddir/x.txt", "x");
  vfs.writeFile("/proj/keep.txt", "keep");
  vfs.writeFile("/proj/edit.txt", "before");
  vfs.writeFile("/proj/del.txt", "bye");
  vfs.writeFile("/proj/big.bin", Buffer.alloc(VFS_CHUNK_BYTES * 2 + 11, 7));
  vfs.writeFile("/outside.txt", "not projected");
  return { vfs, close: () => db.close() };
}

function sh(dir: string, script: string): string {
  return execFileSync("sh", ["-c", script], { cwd: dir, encoding: "utf8" });
}

function snapshot(vfs: VirtualAgentFs): string[] {
  return vfs
    .list("/")
    .map((s) => (s.kind === "file" ? `${s.path}=${vfs.readFile(s.path).toString("hex")}` : s.path));
}

/** Every host path below `dir`, to check a projection wrote nothing elsewhere. */
function hostFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();
}

describe("withProjection", () => {
  it("syncs back a shell command's creates, edits, deletes and nested directories", async () => {
    const { vfs, close } = setup();
    const tmpRoot = tempDir();
    let seen = "";
    const { result, changes } = await withProjection(
      vfs,
      (dir) => {
        seen = dir;
        expect(modeOf(statSync(dir))).toBe(0o700);
        expect(hostFiles(tmpRoot)).toHaveLength(1 + 6); // the dir itself and its 6 entries
        return sh(
          dir,
          `echo new > new.txt; printf edited > edit.txt; rm del.txt; rm -r olddir
           mkdir -p nest/deeper && echo deep > nest/deeper/file.txt; mkdir emptydir
           cat big.bin big.bin > big2.bin; ls keep.txt`,
        );
      },
      { path: "/proj", tmpRoot },
    );
    expect(result.trim()).toBe("keep.txt");
    expect(existsSync(seen)).toBe(false);
    expect(hostFiles(tmpRoot)).toEqual([]);
    expect(vfs.readFile("/proj/new.txt", "utf8")).toBe("new\n");
    expect(vfs.readFile("/proj/edit.txt", "utf8")).toBe("edited");
    expect(vfs.readFile("/proj/keep.txt", "utf8")).toBe("keep");
    expect(vfs.readFile("/proj/nest/deeper/file.txt", "utf8")).toBe("deep\n");
    expect(vfs.stat("/proj/emptydir").kind).toBe("directory");
    const big = vfs.readFile("/proj/big.bin");
    expect(vfs.readFile("/proj/big2.bin").equals(Buffer.concat([big, big]))).toBe(true);
    expect(vfs.exists("/proj/del.txt")).toBe(false);
    expect(vfs.exists("/proj/olddir")).toBe(false);
    expect(vfs.readFile("/outside.txt", "utf8")).toBe("not projected");
    expect(changes).toEqual({
      created: [
        "/proj/big2.bin",
        "/proj/emptydir",
        "/proj/nest",
        "/proj/nest/deeper",
        "/proj/nest/deeper/file.txt",
        "/proj/new.txt",
      ].sort(),
      updated: ["/proj/edit.txt"],
      deleted: ["/proj/del.txt", "/proj/olddir"],
      skipped: [],
    });
    close();
  });

  for (const [name, script] of [
    ["an absolute symlink", "ln -s /etc/passwd leak"],
    ["a relative symlink that climbs out", "mkdir d && ln -s ../../../.. d/up"],
    ["a symlink to a directory outside", "ln -s / root"],
    ["a chain through an escaping symlink", "ln -s /etc a && ln -s a/passwd b"],
  ] as const) {
    it(`refuses ${name}, syncs nothing and removes the temp dir`, async () => {
      const { vfs, close } = setup();
      const before = snapshot(vfs);
      const tmpRoot = tempDir();
      await expect(
        withProjection(vfs, (dir) => sh(dir, `echo x > new.txt; ${script}`), {
          path: "/proj",
          tmpRoot,
        }),
      ).rejects.toMatchObject({ code: "E_PATH", message: /points outside/ });
      expect(snapshot(vfs)).toEqual(before);
      expect(hostFiles(tmpRoot)).toEqual([]);
      close();
    });
  }

  it("skips a symlink that stays inside, without following it", async () => {
    const { vfs, close } = setup();
    const { changes } = await withProjection(vfs, (dir) => sh(dir, "ln -s keep.txt alias"), {
      path: "/proj",
    });
    expect(changes.skipped).toEqual([
      { path: "/proj/alias", reason: expect.stringMatching(/symbolic link/) },
    ]);
    expect(vfs.exists("/proj/alias")).toBe(false);
    close();
  });

  it("syncs nothing when the callback fails, and still removes the temp dir", async () => {
    const { vfs, close } = setup();
    const before = snapshot(vfs);
    const tmpRoot = tempDir();
    await expect(
      withProjection(
        vfs,
        (dir) => {
          sh(dir, "rm keep.txt; echo x > new.txt");
          throw new Error("command failed");
        },
        { path: "/proj", tmpRoot },
      ),
    ).rejects.toThrow("command failed");
    expect(snapshot(vfs)).toEqual(before);
    expect(hostFiles(tmpRoot)).toEqual([]);
    close();
  });

  it("refuses names the VFS refuses and a subtree changed meanwhile (E_CONFLICT)", async () => {
    const { vfs, close } = setup();
    const before = snapshot(vfs);
    await expect(
      withProjection(vfs, (dir) => sh(dir, "touch \"$(printf 'bad\\nname')\""), { path: "/proj" }),
    ).rejects.toMatchObject({ code: "E_PATH", message: /control character/ });
    await expect(
      withProjection(
        vfs,
        (dir) => {
          sh(dir, "echo mine > keep.txt");
          vfs.writeFile("/proj/other.txt", "written by someone else meanwhile");
        },
        { path: "/proj" },
      ),
    ).rejects.toMatchObject({ code: "E_CONFLICT" });
    expect(snapshot(vfs)).toEqual(
      [...before, expect.stringMatching(/^\/proj\/other\.txt=/)].sort(),
    );
    close();
  });

  it("materializes odd but legal names inside the temp dir only", async () => {
    const { vfs, close } = setup();
    const names = ["%2e%2e", "...", "~", "C:", " lead", "-rf", "a b", "..a", "é", "\u00a0"];
    for (const name of names) vfs.writeFile(`/odd/${name}`, name, { parents: true });
    const tmpRoot = tempDir();
    await withProjection(
      vfs,
      (dir) => {
        const listed = hostFiles(tmpRoot);
        expect(listed.every((p) => p.startsWith(dir.slice(tmpRoot.length + 1)))).toBe(true);
        expect(readdirSync(dir).sort()).toEqual([...names].sort());
        for (const p of listed)
          expect(join(tmpRoot, p).startsWith(`${dir}${sep}`) || join(tmpRoot, p) === dir).toBe(
            true,
          );
      },
      { path: "/odd", tmpRoot },
    );
    expect(
      vfs
        .readdir("/odd")
        .map((e) => e.name)
        .sort(),
    ).toEqual([...names].sort());
    close();
  });
});
