import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll } from "vitest";

/** s3rver's own credentials: it checks every signature against them. */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" };

const SERVER = fileURLToPath(new URL("./s3-server-process.cjs", import.meta.url));

export interface S3Server {
  /** `http://127.0.0.1:<port>`, path-style. */
  endpoint: string;
  bucket: string;
  /** Where s3rver keeps the bucket's objects. */
  directory: string;
  /** Requests served so far: Litestream's, and every other client's (this process's). */
  requests(): Promise<{ litestream: number; other: number }>;
}

/**
 * A fake S3 (s3rver) in a process of its own on 127.0.0.1, with one empty bucket, for the calling
 * test file; its credentials are put in this process's environment, where Litestream (a child)
 * and the S3 replica store take them.
 */
export function useS3Server(bucket = "replicas"): () => S3Server {
  let child: ChildProcess | undefined;
  let server: S3Server | undefined;
  const saved = { ...process.env };
  const stopAtExit = () => child?.kill("SIGKILL");
  beforeAll(async () => {
    const directory = mkdtempSync(join(tmpdir(), "agentstate-s3-"));
    child = spawn(process.execPath, [SERVER, directory, bucket], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    process.once("exit", stopAtExit);
    const port = await firstLine(child);
    const endpoint = `http://127.0.0.1:${port}`;
    const requests = async () => {
      const response = await fetch(`${endpoint}/__requests`);
      return (await response.json()) as { litestream: number; other: number };
    };
    server = { endpoint, bucket, directory, requests };
    Object.assign(process.env, S3RVER_CREDENTIALS);
  }, 30_000);
  afterAll(() => {
    process.off("exit", stopAtExit);
    child?.kill("SIGKILL");
    for (const key of Object.keys(S3RVER_CREDENTIALS)) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
    if (server) rmSync(server.directory, { recursive: true, force: true });
  });
  return () => {
    if (!server) throw new Error("useS3Server(): the server is started in beforeAll");
    return server;
  };
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      text += chunk;
      if (text.includes("\n")) resolve(text.slice(0, text.indexOf("\n")));
    });
    child.on("exit", (code) => reject(new Error(`s3rver exited with ${code} before listening`)));
  });
}
