import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runA3r } from "../test-support/run-cli.ts";
import { trainerTopicText } from "../test-support/fixture-topic.ts";

/**
 * The secret scan: secrets of a dozen shapes planted where a person or a program puts them
 * (the topic's question and its command, the environment, the training log), a campaign
 * run through the CLI, and then every file a3r wrote under the runs folder (the campaign
 * folder, its checkpoint database included, read as bytes, and the local host's run
 * folders with their blueprint copies and worker logs) searched for any 8 characters of
 * any of them. The raw training logs are the one documented exception (README, Security): they
 * are the program's own output, written by it straight into logs/attempt-N.log.
 */
const codebase = join(import.meta.dirname, "../worker/__fixtures__");

/** In the topic's question: shapes a person pastes. */
const inQuestion = {
  jwt: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJRNHZ6S3RwOSIsIm5hbWUiOiJZdzJ4In0.Hq7vTz3LwR8kXc2NpB5mYd9FsJ4gUa6E",
  githubPat: "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z2Sx4Dc6Fv8Gb",
  google: "AIzaSyQ8vT3wLk9Zx2Rb7Nc5Md1Pq6Hs4Jt0Vyu",
  slackHook: "T0Q8WZ3KL/B7RX2MN4PQ/hV9cL3tY6wQz1Rk8Nb5Jd2Fx",
  basic: Buffer.from("deploy:Vq7Lx2Rz9Tk4").toString("base64"),
  urlPassword: "Wn5Ry8Kq2Zt6",
  redisPassword: "Gh4Lp9Xs3Vb7",
  dbPass: "Jm6Tq1Ew8Rz3",
  mysqlPassword: "Ue2Ko7Pd4Nf9",
  wandb: "9f3c2b7a1e6d4c8b0a5f9e2d7c3b1a6f4e8d2c7b",
  stripe: "sk_live_51Qz8WxTk3Lm9Rv2Bn7Yc4Hd",
};
/** In the command: a key passed as an argument, and one the program prints. */
const inCommand = {
  apiKey: "sk-proj-Rk3Tz8Wq1Yx6Lm2Np9Vb4Hd7Jc5Fs0Ga",
  slackBot: "xoxb-4816203957-Zq8Tw3Lk7Rx2Nv5M",
};
/** In the environment of the leader (and so of its workers): values only known from there. */
const inEnvironment = {
  A3R_TEST_SERVICE_TOKEN: "q8Zr!tv0-Lm3pW_xY",
  A3R_TEST_DB_PASSWORD: "Corr3ct-H0rse-Battery",
};
/** Printed by the training program: a key wrapped over two lines, AWS keys (the secret unlabeled), a bearer token. */
const inLog = {
  wrapped: "sk-proj-Ab3Cd5Ef7Gh9Jk2Lm4Np6Qr8St1Uv3Wx5Yz7",
  awsKeyId: "AKIAQ7Z3K9L2M8N4P6R1",
  aws: "wJa1rXUtnFEMI/K7MDENG/bPxRfiCYz9Q3Lk8Tq2",
  bearer: "Yt6Re4Wq2Az8Sx1Dc9Fv7Gb5",
};

const logText = [
  `error: invalid key ${inLog.wrapped.slice(0, 30)}`,
  `${inLog.wrapped.slice(30)} was refused`,
  `aws credentials: ${inLog.awsKeyId} ${inLog.aws}`,
  `Authorization: Bearer ${inLog.bearer}`,
].join("\n");

function question(): string {
  return [
    "Does the learning rate change the fixture trainer's final reward?",
    "",
    `Context pasted from the ops channel: the session token is ${inQuestion.jwt}, the CI clones with ${inQuestion.githubPat},`,
    `maps use key=${inQuestion.google}, alerts go to https://hooks.slack.com/services/${inQuestion.slackHook},`,
    `the dashboard wants "Authorization: Basic ${inQuestion.basic}" and lives at https://admin:${inQuestion.urlPassword}@dash.example.com/,`,
    `the cache is redis://:${inQuestion.redisPassword}@cache.example.com:6379, DB_PASS=${inQuestion.dbPass},`,
    `backups run mysqldump -u root -p${inQuestion.mysqlPassword} prod, wandb login ${inQuestion.wandb}, billing uses ${inQuestion.stripe}.`,
  ].join("\n");
}

const secrets: Record<string, string> = { ...inQuestion, ...inCommand, ...inEnvironment, ...inLog };

/** Every 8-character piece of every secret; the prefixes every key of a kind shares are not secret. */
function fragments(): { name: string; fragment: string }[] {
  const publicPrefixes = ["AKIA", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.", "github_pat_", "AIzaSy", "sk_live_", "sk-proj-", "xoxb-"];
  return Object.entries(secrets).flatMap(([name, secret]) => {
    const prefix = publicPrefixes.find((candidate) => secret.startsWith(candidate)) ?? "";
    const value = secret.slice(prefix.length);
    return Array.from({ length: Math.max(0, value.length - 7) }, (_, index) => ({ name, fragment: value.slice(index, index + 8) }));
  });
}

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** `file: secret name` for every planted fragment found, raw logs left out. */
async function scan(root: string): Promise<string[]> {
  const found = new Set<string>();
  const pieces = fragments();
  for (const file of await filesUnder(root)) {
    const name = relative(root, file);
    if (/(^|\/)logs\/attempt-\d+(-client-\d+)?\.log$/.test(name)) continue;
    const bytes = (await readFile(file)).toString("latin1");
    for (const piece of pieces) if (bytes.includes(piece.fragment)) found.add(`${name}: ${piece.name}`);
  }
  return [...found].sort();
}

describe("a campaign's files hold no planted secret", () => {
  let dir: string;
  let runsDir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-secret-scan-"));
    runsDir = join(dir, "runs");
    await writeFile(join(dir, "log-secrets.txt"), logText);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function research(title: string, extra: string, flags: string[] = []): Promise<{ campaign: string; stderr: string; code: number }> {
    const command = [
      "node trainer.mjs --steps 4 --step-ms 50",
      `--api-key ${inCommand.apiKey} --say ${inCommand.slackBot}`,
      `--say-file ${join(dir, "log-secrets.txt")} --say-env ${Object.keys(inEnvironment).join(",")}`,
      extra,
    ].join(" ");
    const topicFile = join(dir, `${title}.md`);
    await writeFile(topicFile, trainerTopicText({ title, codebase, command, seeds: 1, stages: 3, experiments: 10, question: question() }));
    const result = await runA3r(["research", topicFile, "--runs-dir", runsDir, "--planner", "heuristic", "--max-stages", "1", ...flags], {
      timeoutMs: 120_000,
      env: inEnvironment,
    });
    return { campaign: join(runsDir, title), stderr: result.stderr, code: result.code };
  }

  it("after runs that succeed: the report is written and nothing a3r wrote holds a secret", async () => {
    const { campaign, stderr, code } = await research("secret-scan-ok", "");
    expect(code, stderr).toBe(0);
    expect(stderr).not.toContain(inCommand.apiKey);
    const files = (await filesUnder(campaign)).map((file) => relative(campaign, file));
    expect(files).toEqual(expect.arrayContaining(["report.md", "report.html", "leader.sqlite", "topic.md", "events.jsonl"]));
    expect(files.filter((file) => file.startsWith("stages/1/blueprints/"))).toHaveLength(2);
    // The command keeps its secrets as references, which the worker's shell expands.
    expect(stderr).toMatch(/secrets: the topic's command held 2 literal secret\(s\)/);
    expect(await readFile(join(campaign, "stages/1/blueprints/s1-baseline-seed1.md"), "utf8")).toContain(
      '--api-key "${A3R_SECRET_API_KEY}" --say "${A3R_SECRET_SAY}"',
    );
    // The runs ran the command with the key: the program printed what it was given.
    const log = await readFile(join(campaign, "results/s1-baseline-seed1/logs/attempt-1.log"), "utf8");
    expect(log).toContain(inCommand.slackBot);
    expect(log).toContain(`a3r_test_db_password is ${inEnvironment.A3R_TEST_DB_PASSWORD}`);
    expect(log).toMatch(/training finished/);
    expect(await scan(runsDir)).toEqual([]);
  }, 180_000);

  it("after runs that fail on what they printed: the failure is on record, and still no secret", async () => {
    const { campaign, stderr } = await research("secret-scan-failed", "--auth-error");
    const status = JSON.parse(await readFile(join(campaign, "results/s1-baseline-seed1/status.json"), "utf8")) as { state: string };
    expect(status.state, stderr).toBe("failed");
    expect(await readFile(join(campaign, "results/s1-baseline-seed1/attempts.md"), "utf8")).toMatch(/401/);
    expect(await scan(runsDir)).toEqual([]);
  }, 180_000);

  it("refuses to launch a resumed campaign's runs without the secrets its command names, and goes on with them", async () => {
    const { stderr, code } = await research("secret-scan-review", "", ["--review"]);
    expect(code, stderr).toBe(0);
    expect(stderr).toMatch(/leader: approve_plan \(stage 1\)\n$/);
    const resume = ["resume", "secret-scan-review", "--runs-dir", runsDir, "--approve"];
    const refused = await runA3r(resume, { env: inEnvironment });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("error [CONFIG_INVALID]");
    expect(refused.stderr).toContain("the campaign's command needs A3R_SECRET_API_KEY, A3R_SECRET_SAY");
    const secretsEnv = { A3R_SECRET_API_KEY: inCommand.apiKey, A3R_SECRET_SAY: inCommand.slackBot };
    const resumed = await runA3r(resume, { env: { ...inEnvironment, ...secretsEnv }, timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/leader: design \(stage 1\)/);
    expect(await scan(runsDir)).toEqual([]);
  }, 180_000);
});
