"""A Python trainer for the worker's fault tests: writes its metrics with json.dumps (which
writes NaN, Infinity and -Infinity as bare tokens) to $A3R_METRICS_FILE, checkpoints every
step under $A3R_CHECKPOINT_DIR and resumes from it when A3R_RESUME=1.

  --steps N          how many steps
  --nan-after K      the loss is NaN after step K while lr is above --nan-lr-above L
  --inf-reward-at K  reward_mean is Infinity at step K (a warning, not a failure)
"""
import json
import os
import sys
import time

args = sys.argv[1:]


def option(name, fallback):
    flag = "--" + name
    return args[args.index(flag) + 1] if flag in args else fallback


overrides = json.loads(os.environ.get("A3R_OVERRIDES", "{}"))
lr = float(overrides.get("lr", 0.001))
steps = int(option("steps", 5))
nan_after = int(option("nan-after", 10**9))
nan_lr_above = float(option("nan-lr-above", 0))
inf_reward_at = int(option("inf-reward-at", -1))
checkpoint_dir = os.environ.get("A3R_CHECKPOINT_DIR")
checkpoint = os.path.join(checkpoint_dir, "last.json") if checkpoint_dir else None
start = 0
if os.environ.get("A3R_RESUME") == "1" and checkpoint and os.path.exists(checkpoint):
    with open(checkpoint) as handle:
        start = json.load(handle)["step"]
    print("resuming from step %d" % start, flush=True)
for step in range(start + 1, steps + 1):
    time.sleep(0.05)
    diverged = step > nan_after and lr > nan_lr_above
    loss = float("nan") if diverged else 1.0 / (step + 1)
    reward = float("inf") if step == inf_reward_at else min(1.0, 0.3 + step * 0.05)
    with open(os.environ["A3R_METRICS_FILE"], "a") as handle:
        handle.write(json.dumps({"step": step, "loss": loss, "reward_mean": reward, "lr": lr}) + "\n")
    if diverged:
        continue
    if checkpoint:
        os.makedirs(checkpoint_dir, exist_ok=True)
        with open(checkpoint, "w") as handle:
            json.dump({"step": step}, handle)
print("training finished", flush=True)
