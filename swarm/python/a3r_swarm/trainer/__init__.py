"""Persistent GRPO trainer speaking a3r-trainer/1 (JSON lines on stdin/stdout)."""

from .session import TrainerSession

__all__ = ["TrainerSession"]
