"""Parsing and checking chat-completion request bodies; every error names its field."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import BadRequest
from .generation import SamplingParams

ROLES = {"system", "user", "assistant", "tool"}


# vLLM sampling fields that change the distribution a token is drawn from in ways the
# trainer cannot correct for (its log-probs divide by the temperature and nothing else),
# with the values that leave it unchanged. Anything else is refused, naming the field,
# rather than sampled from a policy the trainer does not compute.
NEUTRAL_SAMPLING = {
    "top_k": (-1, 0), "min_p": (0,), "repetition_penalty": (1,), "presence_penalty": (0,),
    "frequency_penalty": (0,), "logit_bias": ({},), "min_tokens": (0,), "bad_words": ([],),
    "allowed_token_ids": (), "use_beam_search": (False,), "ignore_eos": (False,), "best_of": (1,),
}


@dataclass
class ChatRequest:
    model: str | None
    messages: list[dict]
    params: SamplingParams
    seed: int | None
    want_logprobs: bool
    want_token_ids: bool = False


def _same(value, neutral) -> bool:
    if isinstance(value, bool) or isinstance(neutral, bool):
        return value is neutral  # True must not pass for a penalty of 1
    return type(value) in (int, float) if isinstance(neutral, (int, float)) and value == neutral else value == neutral


def check_neutral_sampling(body: dict) -> None:
    for name, neutral in NEUTRAL_SAMPLING.items():
        value = body.get(name)
        if value is None or any(_same(value, option) for option in neutral):
            continue
        shown = ", ".join(repr(v) for v in neutral) or "nothing"
        raise BadRequest(f"{name}: {value!r} changes the sampling distribution in a way the trainer cannot correct "
                         f"for (its log-probs use the temperature only); send {shown} or leave it out")


def _number(body: dict, name: str, default: float, low: float, high: float | None = None) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadRequest(f"{name}: expected a number")
    if value < low or (high is not None and value > high):
        raise BadRequest(f"{name}: must be between {low} and {high if high is not None else 'inf'}, got {value}")
    return float(value)


def _content_text(content, index: int) -> str:
    """OpenAI content: a string, null, or a list of parts of which the text ones count."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise BadRequest(f"messages[{index}].content: only text parts are supported")
            texts.append(part["text"])
        return "".join(texts)
    raise BadRequest(f"messages[{index}].content: expected a string or a list of text parts")


def parse_chat_request(body, default_max_tokens: int = 16) -> ChatRequest:
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("model: expected a string")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise BadRequest("messages: expected a non-empty list")
    messages = []
    for index, message in enumerate(raw_messages):
        if not isinstance(message, dict):
            raise BadRequest(f"messages[{index}]: expected an object")
        if message.get("role") not in ROLES:
            raise BadRequest(f"messages[{index}].role: expected one of {sorted(ROLES)}, got {message.get('role')!r}")
        messages.append({"role": message["role"], "content": _content_text(message.get("content"), index)})
    if body.get("stream"):
        raise BadRequest("stream: streaming is not supported by the reference server")
    if body.get("n") not in (None, 1):
        raise BadRequest("n: only n = 1 is supported")
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    if max_tokens is None:
        max_tokens = default_max_tokens
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest("max_tokens: expected a positive integer")
    stop = body.get("stop")
    if stop is None:
        stop = []
    elif isinstance(stop, str):
        stop = [stop]
    elif not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("stop: expected a string or a list of strings")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest("seed: expected an integer")
    logprobs = body.get("logprobs", False)
    if not isinstance(logprobs, bool):
        raise BadRequest("logprobs: expected a boolean")
    return_token_ids = body.get("return_token_ids", False)
    if not isinstance(return_token_ids, bool):
        raise BadRequest("return_token_ids: expected a boolean")
    check_neutral_sampling(body)
    params = SamplingParams(temperature=_number(body, "temperature", 1.0, 0.0, 100.0),
                            top_p=_number(body, "top_p", 1.0, 0.0, 1.0), max_tokens=max_tokens, stop=stop)
    if params.top_p == 0:
        raise BadRequest("top_p: must be greater than 0")
    return ChatRequest(model, messages, params, seed, logprobs, return_token_ids)
