import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeEngineConformance } from "../engine-conformance.test-support.ts";
import type { TrainingSample } from "../port/engine.ts";
import { EngineError } from "../port/engine-error.ts";
import { OpenAiCompatibleEngine } from "./openai-compatible-engine.ts";

const repositoryRoot = resolve(import.meta.dirname, "../../..");
const fixtures = join(repositoryRoot, "swarm/engines/openai-compatible/fixtures");

interface Upstream {
  baseUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the fixture upstream as a real second process and waits for its port line. */
async function startUpstream(extraArguments: string[] = []): Promise<Upstream> {
  const child = spawn(process.execPath, [join(repositoryRoot, "bin/run-ts.js"), join(fixtures, "upstream.ts"), "--port", "0", ...extraArguments], {
    cwd: repositoryRoot,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolvePort, reject) => {
    child.once("exit", (code) => reject(new Error(`upstream exited with ${code} before listening`)));
    lines.once("line", (line) => resolvePort((JSON.parse(line) as { port: number }).port));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    process: child,
    stop: () =>
      new Promise((resolveStop) => {
        if (child.exitCode !== null) return resolveStop();
        child.once("exit", () => resolveStop());
        child.kill("SIGTERM");
      }),
  };
}

function trainerCommand(stateDirectory: string, extra = ""): string {
  return `"${process.execPath}" "${join(repositoryRoot, "bin/run-ts.js")}" "${join(fixtures, "trainer.ts")}" --state "${stateDirectory}" ${extra}`;
}

describeEngineConformance("openai-compatible (embedded upstream in a second process, fixture trainer)", async () => {
  const upstream = await startUpstream();
  const experimentDir = await mkdtemp(join(tmpdir(), "a3r-openai-compatible-"));
  const engine = new OpenAiCompatibleEngine({
    kind: "openai-compatible",
    base_url: upstream.baseUrl,
    model: "base",
    trainer_command: trainerCommand(join(experimentDir, "trainer-state")),
    experiment_dir: experimentDir,
  });
  await engine.load();
  return {
    engine,
    cleanup: async () => {
      await engine.close();
      await upstream.stop();
      await rm(experimentDir, { recursive: true, force: true });
    },
  };
});

describe("openai-compatible engine", () => {
  let upstream: Upstream;
  let plainUpstream: Upstream;
  let strictUpstream: Upstream;
  let experimentDir: string;
  beforeAll(async () => {
    [upstream, plainUpstream, strictUpstream] = await Promise.all([
      startUpstream(),
      startUpstream(["--without-token-ids"]),
      startUpstream(["--strict-openai"]),
    ]);
    experimentDir = await mkdtemp(join(tmpdir(), "a3r-openai-compatible-"));
  });
  afterAll(async () => {
    await Promise.all([upstream?.stop(), plainUpstream?.stop(), strictUpstream?.stop()]);
    if (experimentDir) await rm(experimentDir, { recursive: true, force: true });
  });

  const messages = [
    { role: "system" as const, content: "You name colours." },
    { role: "user" as const, content: "What colour is the lemon?" },
  ];

  it("uses the upstream's token ids and log-probs when it returns them", async () => {
    const engine = new OpenAiCompatibleEngine({ kind: "openai-compatible", base_url: upstream.baseUrl, model: "base", experiment_dir: experimentDir });
    await engine.load();
    const result = await engine.generate({ messages, maxTokens: 3, seed: 5 });
    expect(result.promptTokenIds).toEqual(engine.encodeChat(messages, { addGenerationPrompt: true }).tokenIds);
    expect(result.completionLogprobs).toHaveLength(result.completionTokenIds.length);
    expect(result.completionLogprobs!.every((value) => value < 0)).toBe(true);
    expect(result.warnings).toBeUndefined();
  });

  it("learns at load that the upstream tokenizes as its word tokenizer, and only then encodes chats itself", async () => {
    const engine = new OpenAiCompatibleEngine({ kind: "openai-compatible", base_url: upstream.baseUrl, model: "base", experiment_dir: experimentDir });
    expect(() => engine.encodeChat(messages)).toThrow(/needs base's own tokenizer/);
    await engine.load();
    expect(engine.encodeChat(messages).tokenIds.length).toBeGreaterThan(5);
  });

  it("fails a request whose answer has no token ids rather than re-tokenizing another model's text", async () => {
    const engine = new OpenAiCompatibleEngine({ kind: "openai-compatible", base_url: plainUpstream.baseUrl, model: "base", experiment_dir: experimentDir });
    await engine.load();
    const failure = await engine.generate({ messages, maxTokens: 3, seed: 5 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineError);
    expect((failure as EngineError).message).toMatch(/no prompt and completion token ids.*will not re-tokenize/);
    expect((failure as EngineError).hint).toMatch(/vLLM ≥ 0\.10\.2 \(return_token_ids\)/);
    expect(() => engine.encodeChat(messages)).toThrow(EngineError);
    const probe = await engine.probeTokenIds();
    expect({ tokenIds: probe.tokenIds, wordTokenizer: probe.wordTokenizer }).toEqual({ tokenIds: false, wordTokenizer: false });
  });

  it("falls back to its own tokenizer, with a warning, when told the upstream's model uses it (tokenizer: word)", async () => {
    const engine = new OpenAiCompatibleEngine({
      kind: "openai-compatible",
      base_url: plainUpstream.baseUrl,
      model: "base",
      tokenizer: "word",
      experiment_dir: experimentDir,
    });
    const result = await engine.generate({ messages, maxTokens: 3, seed: 5 });
    expect(result.warnings).toEqual(["token_ids"]);
    expect(result.completionLogprobs).toBeUndefined();
    expect(result.promptTokenIds).toEqual(engine.encodeChat(messages, { addGenerationPrompt: true }).tokenIds);
    expect(engine.encodeChat([{ role: "assistant", content: result.text }]).tokenIds.slice(1, -1)).toEqual(result.completionTokenIds.filter((id) => id !== 4));
  });

  it("drops vLLM's token fields for an upstream that refuses unknown fields, and falls back", async () => {
    const engine = new OpenAiCompatibleEngine({
      kind: "openai-compatible",
      base_url: strictUpstream.baseUrl,
      model: "base",
      tokenizer: "word",
      experiment_dir: experimentDir,
    });
    const first = await engine.generate({ messages, maxTokens: 3, seed: 5 });
    expect(first.warnings).toEqual(["token_ids"]);
    const second = await engine.generate({ messages, maxTokens: 3, seed: 5 });
    expect(second.text).toBe(first.text);
  });

  it("writes the batch as JSONL, runs the trainer, and serves the adapter it produced", async () => {
    const directory = join(experimentDir, "train");
    const engine = new OpenAiCompatibleEngine({
      kind: "openai-compatible",
      base_url: upstream.baseUrl,
      model: "base",
      trainer_command: trainerCommand(join(directory, "state")),
      experiment_dir: directory,
    });
    const result = await engine.generate({ messages, maxTokens: 2, seed: 1 });
    const batch: TrainingSample[] = [0, 1].map((index) => ({
      taskId: "lemon",
      episodeUuid: `e${index}`,
      tokenIds: [...result.promptTokenIds, ...result.completionTokenIds],
      lossMask: [...result.promptTokenIds.map(() => 0), ...result.completionTokenIds.map(() => 1)],
      reward: index,
      ...(index === 1 ? { temperature: 0.8, topP: 0.95 } : {}),
    }));
    const { metrics } = await engine.train(batch, 4);
    expect(metrics.tokens).toBe(2 * result.completionTokenIds.length);
    expect(metrics.reward_mean).toBe(0.5);
    const written = (await readFile(join(directory, "batches/step-4.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // The sampling a sample was drawn with, spelled as the trainer protocol spells it.
    const { topP: _topP, ...second } = batch[1]!;
    expect(written).toEqual([batch[0], { ...second, top_p: 0.95 }]);
    expect(await readdir(join(directory, "adapters/step-4"))).toContain("checkpoint-4");
    expect(engine.model).toBe("a3r-step-4");
    const models = (await (await fetch(`${upstream.baseUrl}/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((model) => model.id)).toContain("a3r-step-4");
    // The adapter really changed the policy the upstream serves.
    const after = await engine.generate({ messages, maxTokens: 2, seed: 1 });
    expect(after.completionLogprobs).not.toEqual(result.completionLogprobs);
  });

  it("reports a failing trainer with its exit code and stderr", async () => {
    const engine = new OpenAiCompatibleEngine({
      kind: "openai-compatible",
      base_url: upstream.baseUrl,
      model: "base",
      trainer_command: trainerCommand(join(experimentDir, "fail-state"), "--fail"),
      experiment_dir: experimentDir,
    });
    const failure = engine.train([], 1);
    await expect(failure).rejects.toBeInstanceOf(EngineError);
    await expect(failure).rejects.toThrow(/exited with 3: trainer fixture: asked to fail/);
  });

  it("says clearly when the upstream is not there", async () => {
    const engine = new OpenAiCompatibleEngine({ kind: "openai-compatible", base_url: "http://127.0.0.1:9/v1", model: "base", experiment_dir: experimentDir });
    await expect(engine.load()).rejects.toMatchObject({ code: "ENGINE_UPSTREAM_UNAVAILABLE" });
  });
});
