import { describe, expect, it } from "vitest";
import { REDACTED, redactSecrets } from "./redact.ts";

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
