"""a3r swarm, Python side: a tiny trainable model, a persistent GRPO trainer and a
reference OpenAI-compatible inference server (see ../README.md)."""

TRAINER_PROTOCOL = "a3r-trainer/1"
