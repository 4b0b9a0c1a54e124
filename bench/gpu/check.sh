#!/usr/bin/env bash
# GPU check for the Python training stack (swarm/python): a random-weight Qwen2-architecture
# model (built here: no downloads), the reference server and the persistent GRPO trainer on
# CUDA, N GRPO steps over HTTP on a task a random model can learn (say words from a fixed
# eighth of the vocabulary; chance ~1/8), then one throughput probe on long sequences.
# Prints tokens/s, step time, peak GPU memory and the reward curve; writes them to
# $OUT/gpu-check.json when OUT is set. Needs torch 2.x, transformers, peft; no vLLM.
#
#   bash bench/gpu/check.sh            # env: PYTHON (default python3), STEPS (20), OUT
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
steps="${STEPS:-20}"
export PYTHONPATH="$repo/swarm/python${PYTHONPATH:+:$PYTHONPATH}"

if ! "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu check: CUDA is not available (torch.cuda.is_available() is false or torch is missing for $python)" >&2
  exit 2
fi
if ! "$python" -c 'import transformers, peft' 2>/dev/null; then
  echo "gpu check: transformers is not installed: pip install transformers peft" >&2
  exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/a3r-gpu-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
json="${OUT:+$OUT/gpu-check.json}"
json="${json:-$work/gpu-check.json}"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; fi

"$python" -c 'import torch; print("gpu check:", torch.__version__, torch.cuda.get_device_name(0))' >&2
"$python" -m a3r_swarm.gpu_check build-qwen --out "$work/model" --vocab-size 32000 --hidden 512 --layers 4 >&2
timeout 420 "$python" -m a3r_swarm.gpu_check run --model "$work/model" --task target-words --device cuda \
  --steps "$steps" --tasks-per-step 8 --repeats 8 --max-tokens 16 --lr 2e-3 --rank 16 --alpha 32 \
  --micro-batch-tokens 16384 --probe-rows 64 --probe-length 1024 --work "$work/run" --json "$json"

"$python" - "$json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
probe = s.get("probe") or {}
print(f"device {s['device']}: reward {s['reward_first']:.3f} -> last-5 mean {s['reward_last5_mean']:.3f} over {s['steps']} steps "
      f"({s['episodes_per_step']} episodes each)")
print("reward curve:", " ".join(f"{r:.2f}" for r in s["reward_curve"]))
print(f"train: {s['train_tokens_per_s_mean']:.0f} tok/s, {s['train_step_seconds_mean']:.2f} s/step; "
      f"rollout {s['rollout_tokens_per_s_mean']:.0f} tok/s; peak GPU memory {s['peak_memory_mb']:.0f} MB")
if probe:
    print(f"throughput probe: {probe['tokens_per_s']:.0f} tok/s, {probe['step_seconds']:.2f} s, peak {probe['peak_memory_mb']:.0f} MB")
print(f"wall {s['wall_seconds']:.0f} s; summary in {sys.argv[1]}")
PY
