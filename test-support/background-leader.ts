import { type ChildProcess, spawn } from "node:child_process";
import { a3rEntry } from "./run-cli.ts";

/**
 * `a3r research ...` in the background, as a person leaves it running, returned once its
 * stderr satisfies `ready` (its runs are running, say): for tests that then stop, kill or
 * resume it. Rejects when the leader ends before that.
 */
export async function startLeaderUntil(
  args: readonly string[],
  ready: (stderr: string) => boolean,
): Promise<{ child: ChildProcess; exited: Promise<number | null>; stderr: () => string }> {
  const child = spawn(process.execPath, [a3rEntry, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const exited = new Promise<number | null>((resolveExit) => child.once("exit", (code) => resolveExit(code)));
  await new Promise<void>((resolveReady, reject) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      if (ready(stderr)) resolveReady();
    });
    child.once("exit", () => reject(new Error(`the leader ended before it was ready: ${stderr}`)));
  });
  return { child, exited, stderr: () => stderr };
}
