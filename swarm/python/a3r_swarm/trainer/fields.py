"""Typed field access for JSON requests: every failure names the field (BAD_REQUEST)."""

from __future__ import annotations

import math
from typing import Any

from ..errors import BadRequest

_MISSING = object()


def _describe(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def get_field(obj: dict, name: str, kind: str, *, where: str = "", default: Any = _MISSING,
              minimum: float | None = None, maximum: float | None = None) -> Any:
    """kind: str | int | number | bool | object | list. A field that is absent (or null)
    gets `default`; with no default it is required."""
    label = f"{where}{name}"
    value = obj.get(name)
    if value is None:
        if default is _MISSING:
            raise BadRequest(f"{label}: required")
        return default
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "object": isinstance(value, dict),
        "list": isinstance(value, list),
    }[kind]
    if not ok:
        raise BadRequest(f"{label}: expected {kind}, got {_describe(value)}")
    if kind == "number":
        value = float(value)
        if not math.isfinite(value):
            raise BadRequest(f"{label}: must be finite")
    if kind == "str" and not value:
        raise BadRequest(f"{label}: must not be empty")
    if minimum is not None and value < minimum:
        raise BadRequest(f"{label}: must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise BadRequest(f"{label}: must be <= {maximum}, got {value}")
    return value


def reject_unknown(obj: dict, allowed: set[str], where: str = "") -> None:
    # Strict keys: a misspelt option silently taking its default would train with the
    # wrong settings, which is worse than an error naming it.
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise BadRequest(f"{where}{unknown[0]}: unknown field (allowed: {', '.join(sorted(allowed))})")
