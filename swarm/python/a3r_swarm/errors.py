"""Typed errors shared by the trainer and the server.

Each carries the protocol error code so the trainer can answer with it unchanged; the
server maps them to HTTP statuses."""

from __future__ import annotations

TRANSFORMERS_HINT = "transformers is not installed: pip install transformers peft"


class A3RError(Exception):
    code = "INTERNAL"
    retryable = False

    def __init__(self, message: str, *, retryable: bool | None = None):
        super().__init__(message)
        self.message = message
        if retryable is not None:
            self.retryable = retryable


class BadRequest(A3RError):
    code = "BAD_REQUEST"


class NotLoaded(A3RError):
    code = "NOT_LOADED"


class BadBatch(A3RError):
    code = "BAD_BATCH"


class TokenOutOfVocab(A3RError):
    code = "TOKEN_OUT_OF_VOCAB"


class OutOfMemory(A3RError):
    code = "OUT_OF_MEMORY"
    retryable = True


class NanLoss(A3RError):
    code = "NAN_LOSS"


class CheckpointInvalid(A3RError):
    code = "CHECKPOINT_INVALID"


class MissingDependency(A3RError):
    code = "MISSING_DEPENDENCY"


class ModelNotFound(A3RError):
    # Not a trainer protocol code of its own: the trainer reports it as BAD_REQUEST on the
    # "model" field, the server as its start-up failure line.
    code = "BAD_REQUEST"


class AdapterInvalid(A3RError):
    code = "BAD_REQUEST"


def import_transformers():
    """Import transformers and peft only when a non-tiny model is used: the tiny path and
    the tests must work on machines that have neither."""
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as error:
        raise MissingDependency(f"{TRANSFORMERS_HINT} ({error})") from error
    return transformers, peft


def is_out_of_memory(error: BaseException) -> bool:
    oom_type = getattr(__import__("torch").cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(oom_type, type) and isinstance(error, oom_type):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()
