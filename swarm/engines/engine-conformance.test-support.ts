import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTrainingSamples, type RecordedCall } from "../tracking/index.ts";
import type { ChatMessage, Engine, TrainingSample } from "./port/engine.ts";

/**
 * The one test suite every engine kind passes (embedded, openai-compatible, vllm). `setup` returns a
 * loaded engine and a cleanup; the suite only uses the port, so what it checks is exactly
 * what the swarm server may rely on.
 */
export interface ConformanceSubject {
  engine: Engine;
  cleanup(): Promise<void>;
}

const conversation: ChatMessage[] = [
  { role: "system", content: "You name colours. Answer with one word." },
  { role: "user", content: "What colour is the banana?" },
  { role: "assistant", content: "yellow" },
  { role: "user", content: "And the sky?" },
];

/** A small real batch: eight sampled answers to one prompt, rewarded 1 when they say "yes". */
async function sampledBatch(engine: Engine, seedBase: number): Promise<TrainingSample[]> {
  const batch: TrainingSample[] = [];
  for (let index = 0; index < 8; index++) {
    const messages = conversation.slice(0, 2);
    const result = await engine.generate({ messages, maxTokens: 3, seed: seedBase + index });
    const call: RecordedCall = {
      callIndex: 0,
      messages,
      promptTokenIds: result.promptTokenIds,
      completionTokenIds: result.completionTokenIds,
      completionText: result.text,
      ...(result.completionLogprobs ? { completionLogprobs: result.completionLogprobs } : {}),
      time: Date.now(),
    };
    const reward = index % 2 === 0 ? 1 : 0;
    batch.push(
      ...buildTrainingSamples([call], {
        compareLevel: "token",
        taskId: "banana",
        episodeUuid: `episode-${index}`,
        reward,
        encodeChat: (m, o) => engine.encodeChat(m, o),
      }).samples,
    );
  }
  return batch;
}

/** `setupTimeoutMs`: for an engine whose load starts processes (the vllm engine's server and trainer). */
export function describeEngineConformance(name: string, setup: () => Promise<ConformanceSubject>, options: { setupTimeoutMs?: number } = {}): void {
  describe(`engine conformance: ${name}`, () => {
    let subject: ConformanceSubject;
    let directory: string;
    beforeAll(async () => {
      subject = await setup();
      directory = await mkdtemp(join(tmpdir(), "a3r-engine-conformance-"));
    }, options.setupTimeoutMs);
    afterAll(async () => {
      await subject?.cleanup();
      if (directory) await rm(directory, { recursive: true, force: true });
    });

    it("never generates more than max_tokens, and says so with finish reason length", async () => {
      let sawLength = false;
      for (let seed = 1; seed <= 10; seed++) {
        const result = await subject.engine.generate({ messages: conversation.slice(0, 2), maxTokens: 2, temperature: 1, seed });
        expect(result.completionTokenIds.length).toBeLessThanOrEqual(2);
        expect(result.promptTokenIds.length).toBeGreaterThan(0);
        if (result.finishReason === "length") {
          sawLength = true;
          expect(result.completionTokenIds).toHaveLength(2);
        }
      }
      expect(sawLength).toBe(true);
    });

    it("cuts the text before a stop string, replaying the same seed", async () => {
      let checked = 0;
      for (let seed = 1; seed <= 20 && checked < 3; seed++) {
        const free = await subject.engine.generate({ messages: conversation.slice(0, 2), maxTokens: 6, temperature: 1, seed });
        const words = free.text.split(" ");
        if (words.length < 3) continue;
        const stop = ` ${words[1]}`;
        const stopped = await subject.engine.generate({ messages: conversation.slice(0, 2), maxTokens: 6, temperature: 1, seed, stop: [stop] });
        expect(stopped.text).toBe(free.text.slice(0, free.text.indexOf(stop)));
        expect(stopped.text).not.toContain(stop);
        expect(stopped.finishReason).toBe("stop");
        checked++;
      }
      expect(checked).toBeGreaterThan(0);
    });

    it("encodes a conversation so that every prefix of it is a token prefix", () => {
      const full = subject.engine.encodeChat(conversation);
      expect(full.messageSpans).toHaveLength(conversation.length);
      expect(full.messageSpans[0]!.start).toBe(0);
      expect(full.messageSpans.at(-1)!.end).toBe(full.tokenIds.length);
      for (let count = 1; count < conversation.length; count++) {
        const prefix = subject.engine.encodeChat(conversation.slice(0, count));
        expect(full.tokenIds.slice(0, prefix.tokenIds.length)).toEqual(prefix.tokenIds);
        expect(full.messageSpans[count]!.start).toBe(prefix.tokenIds.length);
      }
      const prompt = subject.engine.encodeChat(conversation, { addGenerationPrompt: true });
      expect(prompt.tokenIds.slice(0, full.tokenIds.length)).toEqual(full.tokenIds);
      expect(prompt.tokenIds.length).toBeGreaterThan(full.tokenIds.length);
    });

    it("trains on a batch and reports finite metrics including loss", async () => {
      const { metrics } = await subject.engine.train(await sampledBatch(subject.engine, 100), 1);
      expect(Object.keys(metrics)).toContain("loss");
      for (const value of Object.values(metrics)) expect(Number.isFinite(value)).toBe(true);
    });

    it("restores a checkpoint so that the same seed gives the same generation again", async () => {
      const path = await subject.engine.save(directory, 1);
      const request = { messages: conversation.slice(0, 2), maxTokens: 4, temperature: 1, seed: 42 };
      const before = await subject.engine.generate(request);
      // Train until the policy visibly changes, so the restore has something to undo.
      let changed = false;
      for (let step = 2; step <= 6 && !changed; step++) {
        await subject.engine.train(await sampledBatch(subject.engine, step * 100), step);
        const probe = await subject.engine.generate(request);
        changed = probe.text !== before.text || JSON.stringify(probe.completionLogprobs) !== JSON.stringify(before.completionLogprobs);
      }
      expect(changed).toBe(true);
      expect(await subject.engine.restore(path)).toBe(1);
      const after = await subject.engine.generate(request);
      expect(after.text).toBe(before.text);
      expect(after.completionTokenIds).toEqual(before.completionTokenIds);
    });
  });
}
