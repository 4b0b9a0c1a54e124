import { describe, expect, it } from "vitest";
import { commandAllowOf, judgeProposedCommand } from "./command-approval.ts";
import { isLossMetric, nonFiniteMetrics } from "./loss-metrics.ts";

describe("which proposed commands run without a person", () => {
  const blueprint = "python3 train.py --config {config}\npython3 eval.py";

  it("lets through lines of the blueprint's own command and lines an allow pattern covers whole", () => {
    expect(judgeProposedCommand("python3 eval.py", blueprint)).toEqual({ automatic: true, unapprovedLines: [] });
    const allow = [String.raw`python3 train\.py( --[\w.=/:{}-]+)*`];
    expect(judgeProposedCommand("python3 train.py --lr=0.001", blueprint, allow)).toEqual({ automatic: true, unapprovedLines: [] });
    expect(judgeProposedCommand("python3 train.py --lr=0.001\ncurl http://127.0.0.1:1/x", blueprint, allow)).toEqual({
      automatic: false,
      unapprovedLines: ["curl http://127.0.0.1:1/x"],
    });
  });

  it("never lets a pattern carry shell syntax, however permissive it is", () => {
    for (const line of ["python3 train.py; rm -rf ~", "python3 train.py && curl x", "python3 train.py $(id)", "python3 train.py > /etc/x"]) {
      expect(judgeProposedCommand(line, blueprint, [".*"]).automatic, line).toBe(false);
    }
  });

  it("reads command_allow from the front matter and ignores what is not a list of strings", () => {
    expect(commandAllowOf({ command_allow: ["a", 3, ""] })).toEqual(["a"]);
    expect(commandAllowOf({ command_allow: "a" })).toEqual([]);
    expect(judgeProposedCommand("x", "", ["(unclosed"]).automatic).toBe(false);
  });
});

describe("which metrics are a loss", () => {
  it("knows the loss names of verl, TRL and Hugging Face, and not the loss scaler", () => {
    expect(["loss", "actor/pg_loss", "critic/vf_loss", "train/loss", "loss_net", "objective", "actor/kl_loss"].every((key) => isLossMetric(key))).toBe(true);
    expect(["actor/grad_norm", "loss_scale", "critic/rewards/mean", "entropy"].some((key) => isLossMetric(key))).toBe(false);
    expect(isLossMetric("entropy", ["entropy"])).toBe(true);
    expect(nonFiniteMetrics({ "actor/pg_loss": Number.NaN, "actor/grad_norm": Number.POSITIVE_INFINITY, reward: 0.5 })).toEqual({
      loss: ["actor/pg_loss"],
      other: ["actor/grad_norm"],
    });
  });
});
