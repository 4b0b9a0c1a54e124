"""Reference OpenAI-compatible inference server (vLLM-shaped token fields)."""
