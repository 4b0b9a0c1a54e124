import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { campaignPaths, createCampaign, JsonlLedger, readEvents, readLedger } from "../../../campaign/index.ts";
import { parseHostsText } from "../../../hosts/kinds/hosts-config.ts";
import { LocalLauncher } from "../../../hosts/index.ts";
import type { DispatchHost, HostConfig } from "../../../hosts/index.ts";
import { createChatModel } from "../../../llm/index.ts";
import { FakeProviderServer } from "../../../test-support/llm-servers/fake-provider-server.ts";
import { fixtureTopicText } from "../../../test-support/fixture-topic.ts";
import {
  wireAnswer,
  wireLastUserMessage,
  wireSchemaName,
  wireSystemPrompt,
  type WireProvider,
  type WireUsage,
} from "../../../test-support/provider-wire-answers.ts";
import { runLeader } from "../../graph/leader-graph.ts";
import { LlmPlanner } from "./llm-planner.ts";
import { loadSkill, type LeaderSkillName } from "./skills.ts";

/**
 * A whole one-stage campaign through the real leader graph, with the llm planner talking
 * through the real `openai` and `@anthropic-ai/sdk` clients to the local wire-format
 * server of llm/testing, and real `a3r worker run` processes running the fixture trainer
 * on this machine. The server answers the five round trips in order: frame, plan stage 1,
 * write (no changes: the drafts run), decide after the runs (stop), conclude.
 *
 * The topic allows two stages so that the model is asked after stage 1 (with a budget of
 * one stage the planner stops on the budget without a call); the model stops there.
 */
const root = resolve(import.meta.dirname, "../../..");
const a3r = `${process.execPath} ${join(root, "bin/a3r.js")}`;
const apiKey = "sk-sdk-campaign-secret-9f8e7d6c5b4a";

const blueprintIds = ["s1-baseline-seed1", "s1-lr-0.01-seed1"];

const framing = {
  question: "Does lr 0.01 give the fixture trainer a higher final reward_mean than lr 0.1?",
  variables: [{ name: "lr", values: [0.1, 0.01], why: "the step size sets how far training gets" }],
  controls: ["the trainer", "its step count", "seed 1"],
  metric: { name: "reward_mean", goal: "maximize" },
  answeredWhen: "one lr ends with a higher final reward_mean",
};

const stagePlan = {
  decision: "continue",
  reasons: [],
  stop: null,
  plan: {
    kind: "screen",
    rationale: "screen the smaller lr against the baseline",
    hypotheses: [
      { id: "H0", statement: "the baseline trains" },
      { id: "H1", statement: "a smaller lr reaches a higher final reward_mean" },
    ],
    configurations: [
      {
        label: "base",
        hypothesis: "H0",
        purpose: "the reference",
        delta: [],
        prediction: { kind: "records", text: "the baseline records reward_mean", against: null, level: null },
      },
      {
        label: "small-lr",
        hypothesis: "H1",
        purpose: "test a smaller step size",
        delta: [{ knob: "lr", value: 0.01 }],
        prediction: { kind: "beats-configuration", text: "lr 0.01 beats the baseline", against: "base", level: null },
      },
    ],
    decisions: [
      { outcome: "lr 0.01 beats the baseline", decision: "stop and report it" },
      { outcome: "otherwise", decision: "stop" },
    ],
  },
};

const keepDrafts = { blueprints: [] };

const stop = {
  decision: "stop",
  reasons: ["the screen compared both lr values"],
  stop: { reason: "exhausted", explanation: "both lr values of the topic were measured" },
  plan: null,
};

const conclusion = {
  answer: "Over the SDK wire: lr 0.01 and lr 0.1 end with the same final reward_mean on the fixture trainer.",
  claims: [
    { text: "both lr values recorded a final reward_mean", experimentIds: blueprintIds },
    { text: "the baseline ran to the end", experimentIds: ["s1-baseline-seed1"] },
  ],
  caveats: ["one seed only"],
};

/** The five round trips in order: role, skill, schema name, answer, and distinct token counts. */
const trips: { role: string; skill: LeaderSkillName; schemaName: string; answer: unknown; usage: WireUsage }[] = [
  {
    role: "frame",
    skill: "leader-frame-topic",
    schemaName: "framed_question",
    answer: framing,
    usage: { inputTokens: 1101, outputTokens: 101, cachedTokens: 0 },
  },
  {
    role: "plan",
    skill: "leader-plan-stage",
    schemaName: "stage_decision",
    answer: stagePlan,
    usage: { inputTokens: 1202, outputTokens: 202, cachedTokens: 64 },
  },
  {
    role: "write",
    skill: "leader-write-blueprint",
    schemaName: "blueprints",
    answer: keepDrafts,
    usage: { inputTokens: 1303, outputTokens: 13, cachedTokens: 0 },
  },
  { role: "plan", skill: "leader-plan-stage", schemaName: "stage_decision", answer: stop, usage: { inputTokens: 1404, outputTokens: 44, cachedTokens: 128 } },
  {
    role: "analyze",
    skill: "leader-analyze-results",
    schemaName: "conclusion",
    answer: conclusion,
    usage: { inputTokens: 1505, outputTokens: 155, cachedTokens: 0 },
  },
];

const cases: { provider: WireProvider; model: string; path: string; baseUrl: (server: FakeProviderServer) => string }[] = [
  { provider: "openai", model: "gpt-4.1", path: "/v1/chat/completions", baseUrl: (server) => `${server.url}/v1` },
  { provider: "anthropic", model: "claude-sonnet-4-6", path: "/v1/messages", baseUrl: (server) => server.url },
];

/** Every file under a folder, with its text (to look for the key everywhere). */
async function filesUnder(dir: string): Promise<{ path: string; text: string }[]> {
  const files: { path: string; text: string }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.push({ path, text: await readFile(path, "latin1") });
  }
  return files;
}

describe.each(cases)("a one-stage campaign over the $provider SDK", (scenario) => {
  let server: FakeProviderServer;
  let runsDir: string;
  beforeAll(async () => {
    server = await FakeProviderServer.start();
    runsDir = await mkdtemp(join(tmpdir(), `a3r-sdk-campaign-${scenario.provider}-`));
  });
  afterAll(async () => {
    await server.close();
    await rm(runsDir, { recursive: true, force: true });
  });

  it("frames, plans, runs the drafts, stops and concludes from the provider's answers, booking each round trip", async () => {
    const campaignId = `sdk-${scenario.provider}`;
    const paths = campaignPaths(runsDir, campaignId);
    const workdir = join(runsDir, "host");
    const parsed = parseHostsText(`hosts:\n  - name: here\n    kind: local\n    gpus: 0\n    max_runs: 2\n    workdir: ${workdir}\n`, "hosts.yaml");
    const hosts: DispatchHost[] = [
      {
        config: { ...parsed.hosts[0]!, a3r } as HostConfig,
        launcher: new LocalLauncher({ host: "here", workdir, a3r }),
        capacity: { name: "here", gpuIndices: [], maxRuns: 2 },
      },
    ];
    await createCampaign(runsDir, campaignId, fixtureTopicText({ stages: 2 }));

    server.play(trips.map((trip) => wireAnswer(scenario.provider, trip.schemaName, trip.answer, trip.usage)));
    const model = await createChatModel(
      { provider: scenario.provider, model: scenario.model, apiKey, baseUrl: scenario.baseUrl(server), maxRetries: 0 },
      { sink: new JsonlLedger(paths.ledger), warn: () => {} },
    );
    const { state: final, waitingFor } = await runLeader({ runsDir, campaignId, planner: new LlmPlanner({ model }), hosts, intervalMs: 200 });

    // The campaign ended with the model's stop after stage 1 and a report.
    expect(waitingFor).toBeNull();
    expect(final.stop).toMatchObject({ reason: "exhausted" });
    expect(final.history).toHaveLength(1);
    expect(final.history[0]!.outcomes.map((outcome) => [outcome.blueprintId, outcome.state])).toEqual(blueprintIds.map((id) => [id, "succeeded"]));
    expect(final.reportFile).toBe(paths.report);

    // The runs really ran: a finished result directory per blueprint, nothing else.
    expect((await readdir(paths.results)).sort()).toEqual(blueprintIds);
    for (const id of blueprintIds) expect((await readFile(join(paths.results, id, "finish.flag"), "utf8")).trim()).toBe("succeeded");

    // The report carries the model's answer and its claims, grounded in the real experiments.
    const report = await readFile(paths.report, "utf8");
    const html = await readFile(paths.reportHtml, "utf8");
    expect(report).toContain("## Conclusion (model-written)");
    expect(report).toContain(conclusion.answer);
    expect(report).toContain("- both lr values recorded a final reward_mean (experiments: `s1-baseline-seed1`, `s1-lr-0.01-seed1`)");
    expect(report).toContain("- the baseline ran to the end (experiments: `s1-baseline-seed1`)");
    expect(report).not.toContain("FLAGGED");
    expect(html).toContain("Over the SDK wire: lr 0.01 and lr 0.1 end with the same final reward_mean");
    expect(html).toContain("both lr values recorded a final reward_mean");
    expect(await readFile(join(paths.root, "framing.md"), "utf8")).toContain(framing.question);

    // Exactly the five round trips went over the wire, each with its role's skill as the
    // system prompt and asking for its schema, the key in the auth header only.
    expect(server.requests.map((request) => request.path)).toEqual(trips.map(() => scenario.path));
    const bodies = server.requests.map((request) => request.body as Record<string, unknown>);
    for (const [index, trip] of trips.entries()) {
      expect(wireSystemPrompt(scenario.provider, bodies[index]!), `${trip.role} #${index}`).toContain((await loadSkill(trip.skill)).body);
      expect(wireSchemaName(scenario.provider, bodies[index]!)).toBe(trip.schemaName);
      expect(bodies[index]!.model).toBe(scenario.model);
      // Which header (x-api-key or Authorization) is the SDK's business; the key must travel.
      expect(Object.values(server.requests[index]!.headers).some((value) => String(value).includes(apiKey))).toBe(true);
    }
    expect(JSON.stringify(bodies)).not.toContain(apiKey.slice(3));
    // The model read the drafts before writing, and the real runs before deciding and concluding.
    const prompts = bodies.map((body) => wireLastUserMessage(body));
    for (const index of [2, 3, 4]) for (const id of blueprintIds) expect(prompts[index], `${trips[index]!.role} #${index}`).toContain(id);

    // One ledger entry per round trip, in order, with the provider's token counts.
    const { entries } = await readLedger(paths.ledger);
    const llm = entries.filter((entry) => entry.kind === "llm");
    expect(llm.map((entry) => [entry.role, entry.provider, entry.inputTokens, entry.outputTokens, entry.cachedTokens, entry.ok])).toEqual(
      trips.map((trip) => [trip.role, scenario.provider, trip.usage.inputTokens, trip.usage.outputTokens, trip.usage.cachedTokens, true]),
    );

    // The events tell the same story: framed by the llm planner, stopped by the model.
    const { events } = await readEvents(paths.events);
    expect(events.filter((event) => event.kind === "leader.framed")).toMatchObject([{ planner: "llm" }]);
    expect(events.filter((event) => event.kind === "campaign.stop_decided")).toMatchObject([{ stage: 1, reason: "exhausted" }]);
    expect(events.filter((event) => event.kind === "campaign.reported")).toHaveLength(1);

    // The key is nowhere in the campaign: not in the ledger, the events, the report or any other file.
    const files = await filesUnder(runsDir);
    for (const file of [paths.ledger, paths.events, paths.report, paths.reportHtml]) expect(files.map((item) => item.path)).toContain(file);
    expect(files.filter((file) => file.text.includes(apiKey.slice(3))).map((file) => file.path)).toEqual([]);
  }, 60_000);
});
