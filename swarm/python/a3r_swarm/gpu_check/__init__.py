"""End-to-end check: reference server + trainer subprocesses running GRPO over HTTP.

Used by bench/gpu/check.sh on a CUDA box (random Qwen2 model) and by the tests on CPU (tiny
model), so the loop the GPU box runs is the same code the CPU tests exercise."""
