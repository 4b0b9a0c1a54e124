import { describe, expect, it } from "vitest";
import { liftCommandSecrets, REDACTED, redactSecrets, redactValue } from "./redact.ts";

describe("redactSecrets", () => {
  it("removes provider keys, bearer tokens and named secrets", () => {
    const text = [
      "using key sk-ant-api03-abcdefghijklmnopqrstuv",
      "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345",
      "Authorization: Bearer abcdefghijklmnop.qrstuv",
      'password: "hunter2hunter2"',
      "token ghp_abcdefghijklmnopqrstuvwxyz0123",
      "loss=0.25 step=10",
    ].join("\n");
    const redacted = redactSecrets(text, []);
    expect(redacted).not.toContain("abcdefghijklmnopqrstuv");
    expect(redacted).not.toContain("hunter2");
    expect(redacted).toContain(`Bearer ${REDACTED}`);
    expect(redacted).toContain("loss=0.25 step=10");
  });

  it("replaces known secret values whatever their shape", () => {
    expect(redactSecrets("conn to redis://:plainpass123@host", ["plainpass123"])).toBe(`conn to redis://:${REDACTED}@host`);
  });

  it("leaves ordinary training logs alone", () => {
    const log = "step:12 - reward_mean:0.42 - kl:0.001\nCUDA out of memory. Tried to allocate 2.00 GiB";
    expect(redactSecrets(log, [])).toBe(log);
  });
});

describe("redactSecrets on the shapes configs and command lines take", () => {
  it("removes quoted keys, flag values and URL credentials", () => {
    const text = [
      `{"api_key": "abcd1234efgh", "lr": 3e-6}`,
      `{'wandb_api_key': 'f00ba4f00ba4'}`,
      "python train.py --api-key abcdefgh12 --hf-token=hf1234567",
      "redis://admin:s3cr3tpass@redis.cluster.example:6379",
    ].join("\n");
    const redacted = redactSecrets(text, []);
    for (const secret of ["abcd1234efgh", "f00ba4f00ba4", "abcdefgh12", "hf1234567", "s3cr3tpass"]) expect(redacted).not.toContain(secret);
    expect(redacted).toContain('"lr": 3e-6');
    expect(redacted).toContain("redis://admin:[REDACTED]@redis.cluster.example:6379");
  });

  it("keeps the numbers RL logs need: max_tokens, num_tokens, tokenizer", () => {
    const log = "max_tokens: 4096 num_tokens=1024 tokenizer=gpt2 max_prompt_tokens: 512";
    expect(redactSecrets(log, [])).toBe(log);
  });

  it("removes a longer known secret whole even when it contains a shorter one", () => {
    expect(redactSecrets("key=zzzzsecretvalue-extended", ["secretvalue", "zzzzsecretvalue-extended"])).toBe(`key=${REDACTED}`);
  });
});

describe("redactSecrets on keys without a label or split over lines", () => {
  const awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

  it("removes an unlabeled AWS secret access key and keeps git shas and words", () => {
    const sha = "3f786850e387550fdab836ed7e6dc881de23001b";
    const text = `creds: AKIAIOSFODNN7EXAMPLE ${awsSecret}\ncommit ${sha}\nstep 10 reward_mean 0.5`;
    const redacted = redactSecrets(text, []);
    expect(redacted).not.toContain(awsSecret);
    expect(redacted).not.toContain("AKIAIOSFODNN7EXAMPLE");
    expect(redacted).toContain(sha);
    expect(redacted).toContain("step 10 reward_mean 0.5");
  });

  it("removes a provider key a log wrapped over two lines, both halves", () => {
    const key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
    const text = `error: invalid key ${key.slice(0, 12)}\n${key.slice(12)} was refused\nnext line`;
    const redacted = redactSecrets(text, []);
    expect(redacted).not.toContain(key.slice(0, 12));
    expect(redacted).not.toContain(key.slice(12));
    expect(redacted).toContain("was refused\nnext line");
  });

  it("removes a known secret value split over two lines", () => {
    const secret = "q8Zr!tv0-Lm3pW_x";
    const redacted = redactSecrets(`token was ${secret.slice(0, 6)}\n${secret.slice(6)} end`, [secret]);
    expect(redacted).not.toContain(secret.slice(6));
    expect(redacted).toContain(" end");
  });

  it("leaves ordinary wrapped lines alone", () => {
    const text = "loading shards from /data/checkpoints/step-\n100 done\nsk-\nlearn is a word";
    expect(redactSecrets(text, [])).toBe(text);
  });
});

describe("redactSecrets on the shapes an attacker found missing", () => {
  const planted = {
    jwt: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    stripe: "sk_live_51HqLyjWDarjtT1zdp7dcXYZ",
    restricted: "rk_live_51HqLyjWDarjtT1zdp7dcXYZ",
    githubPat: "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV",
    google: "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
    slackBot: "xoxb-1234567890-abcdefghijkl",
    slackHook: "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    dbPass: "hunter2hunter2",
    mysql: "S3cretPassw0rd",
    basic: "dXNlcjpwYXNzd29yZDEyMw==",
    urlPass: "pa55word",
    wandb: "0123456789abcdef0123456789abcdef01234567",
    redis: "r3disPass",
  };
  const text = [
    `token ${planted.jwt}`,
    `stripe ${planted.stripe} and ${planted.restricted}`,
    `git clone with ${planted.githubPat}`,
    `maps key=${planted.google}`,
    `slack ${planted.slackBot} posts to https://hooks.slack.com/services/${planted.slackHook}`,
    `DB_PASS=${planted.dbPass} MYSQL_PASSWORD_PROD: "${planted.dbPass}"`,
    `mysql -u root -p${planted.mysql} mydb; mysqldump --user=root -p'${planted.mysql}' db`,
    `curl -H "Authorization: Basic ${planted.basic}" https://user:${planted.urlPass}@host.example.com/x`,
    `wandb login ${planted.wandb}`,
    `cache redis://:${planted.redis}@cache:6379`,
  ].join("\n");

  it("removes every one of them", () => {
    const redacted = redactSecrets(text, []);
    for (const [name, secret] of Object.entries(planted)) expect(redacted, name).not.toContain(secret.slice(-10));
    expect(redacted).toContain("https://hooks.slack.com/services/[REDACTED]");
    expect(redacted).toContain("redis://:[REDACTED]@cache:6379");
  });

  it("keeps the words and numbers those patterns could be mistaken for", () => {
    const log = [
      "Basic configuration loaded; bypass=true passed: yes num_passes=3 pass@1=0.25",
      "mysql -u root -p mydb -P 3306",
      "wandb: syncing run abc at https://wandb.ai/team/project/runs/x1",
      "http://host:8080/path@v2 and https://example.com/a:b@c",
      'python train.py --api-key $OPENAI_API_KEY --hf-token "${HF_TOKEN}" WANDB_API_KEY=$WANDB_KEY',
    ].join("\n");
    expect(redactSecrets(log, [])).toBe(log);
  });

  it("removes a key whose first half is a key by itself, and the half the next line holds", () => {
    const key = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789ABCD";
    const redacted = redactSecrets(`key ${key.slice(0, 28)}\n${key.slice(28)} rest\nsk-proj-Abcdefghijklmnopqrst\nnext line`, []);
    expect(redacted).not.toContain(key.slice(28));
    expect(redacted).toContain(" rest\n");
    expect(redacted).toContain("\nnext line");
  });

  it("removes a JWT and a GitHub token a log wrapped over two lines", () => {
    const redacted = redactSecrets(
      `auth ${planted.jwt.slice(0, 50)}\n${planted.jwt.slice(50)}\ngit ${planted.githubPat.slice(0, 30)}\n${planted.githubPat.slice(30)}`,
      [],
    );
    expect(redacted).not.toContain(planted.jwt.slice(50, 60));
    expect(redacted).not.toContain(planted.githubPat.slice(30, 40));
  });
});

describe("redactValue", () => {
  it("redacts every string of a JSON value and keeps its shape", () => {
    const value = { state: "failed", reason: "auth: sk-proj-abcdefghijklmnopqrstuvwxyz012345", n: 3, list: ["DB_PASS=hunter2hunter2", null, true] };
    expect(redactValue(value, [])).toEqual({ state: "failed", reason: `auth: ${REDACTED}`, n: 3, list: [`DB_PASS=${REDACTED}`, null, true] });
  });
});

describe("liftCommandSecrets", () => {
  it("turns each literal secret into an environment reference the shell expands to the same word", () => {
    const command = `WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567 python t.py --api-key sk-proj-Abcdefghijklmnop0123456789 --say 'db at redis://:r3disPass@h' --lr 0.1`;
    const lifted = liftCommandSecrets(command, []);
    expect(lifted.command).toBe(
      `WANDB_API_KEY="\${A3R_SECRET_WANDB_API_KEY}" python t.py --api-key "\${A3R_SECRET_API_KEY}" --say 'db at redis://:'"\${A3R_SECRET_1}"'@h' --lr 0.1`,
    );
    expect(lifted.secrets).toEqual({
      A3R_SECRET_WANDB_API_KEY: "0123456789abcdef0123456789abcdef01234567",
      A3R_SECRET_API_KEY: "sk-proj-Abcdefghijklmnop0123456789",
      A3R_SECRET_1: "r3disPass",
    });
    // What is left holds nothing to redact, so a redacted copy of it is the command itself.
    expect(redactSecrets(lifted.command, [])).toBe(lifted.command);
    expect(liftCommandSecrets("python t.py --lr 0.1", [])).toEqual({ command: "python t.py --lr 0.1", secrets: {} });
  });

  it("reuses a name given before for the same value, and numbers a second value of the same label", () => {
    const first = liftCommandSecrets("t --token abcdefgh12345678", []);
    const second = liftCommandSecrets("t --token abcdefgh12345678 && u --token zyxwvuts87654321", [], first.secrets);
    expect(second.command).toBe(`t --token "\${A3R_SECRET_TOKEN}" && u --token "\${A3R_SECRET_TOKEN_1}"`);
  });
});

describe("liftCommandSecrets on settings named like secrets", () => {
  it("leaves a plain word after a *_key setting, and lifts whatever follows a credential's name", () => {
    const command =
      "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/key.json python -m verl.trainer data.prompt_key=prompt reward_fn_key=data_source --ssh-key ~/.ssh/id_ed25519 --api-key sunshine --sort-key x9Fq2ab7";
    expect(liftCommandSecrets(command, []).command).toBe(
      `GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/key.json python -m verl.trainer data.prompt_key=prompt reward_fn_key=data_source --ssh-key ~/.ssh/id_ed25519 --api-key "\${A3R_SECRET_API_KEY}" --sort-key "\${A3R_SECRET_SORT_KEY}"`,
    );
  });
});

describe("redactSecrets on ids and words that hold a key prefix", () => {
  it("leaves a blueprint id or a word in which a key prefix starts mid-word", () => {
    const text = "s1-task-difficulty-hard-seed1 risk-adjusted-learning-rate disk-usage-threshold-high\ns1-task-difficulty-\nhard-seed1 done";
    expect(redactSecrets(text, [])).toBe(text);
  });
});
