import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** `node .../fixture-a3r.js`: the a3r command of a host whose runs use the fixture worker. */
export const fixtureA3rCommand = `${process.execPath} ${fileURLToPath(new URL("./fixture-a3r.js", import.meta.url))}`;
/** `sh .../instant-worker.sh`: runs that finish at once, for benchmarks. */
export const instantA3rCommand = `sh ${fileURLToPath(new URL("./instant-worker.sh", import.meta.url))}`;
/** The real CLI of this checkout. */
export const checkoutA3rCommand = `${process.execPath} ${fileURLToPath(new URL("../bin/a3r.js", import.meta.url))}`;

export interface FixtureBlueprintOptions {
  id: string;
  campaign?: string;
  gpus?: number;
  steps?: number;
  stepMs?: number;
  fail?: boolean;
}

/** Text of a valid a3r blueprint whose `fixture` front matter steers the fixture worker. */
export function fixtureBlueprintText(options: FixtureBlueprintOptions): string {
  const campaign = options.campaign ?? "hosts-test";
  return `---
a3r: blueprint/v1
id: ${options.id}
campaign: ${campaign}
stage: 1
mode: classic
hypothesis: H1
gpus: ${options.gpus ?? 0}
seed: 1
metric: { name: reward_mean, goal: maximize }
prediction: "reward_mean at the last step >= 0.5"
fixture: { steps: ${options.steps ?? 3}, step_ms: ${options.stepMs ?? 100}, fail: ${options.fail === true} }
---
# Experiment Blueprint: ${options.id}

## Purpose

A fixture run for launcher tests: counts steps and reports a rising reward.

## Codebase

\`/tmp/a3r-fixture/code\`

## Virtual Environment

\`/usr/bin/python3\`

## Configuration

none

## Command

\`\`\`bash
echo fixture
\`\`\`

## Result Directory

\`/tmp/a3r-runs/${options.id}\`

## Time Budget

10m

## Additional Notes

Written by test-support/fixture-blueprint.ts.
`;
}

export async function writeFixtureBlueprint(folder: string, options: FixtureBlueprintOptions): Promise<string> {
  const path = join(folder, `${options.id}.md`);
  await writeFile(path, fixtureBlueprintText(options));
  return path;
}
