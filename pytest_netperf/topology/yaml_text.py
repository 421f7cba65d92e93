"""A tiny block-style YAML writer for the rendered configs (dicts, lists, scalars).

Strings are written plain only when they cannot be read as anything else (they start
with a letter or '/', use a small safe alphabet and are not a YAML 1.1 boolean or null);
all others are double-quoted JSON-style, e.g. ``_format_version: "3.0"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_PLAIN_STRING = re.compile(r"^[A-Za-z/][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def to_yaml(value: Any, header: str = "") -> str:
    """Render ``value`` as block YAML; ``header`` lines become leading comments."""
    comments = [f"# {line}".rstrip() for line in header.splitlines()]
    return "\n".join([*comments, *_lines(value, 0)]) + "\n"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        plain = _PLAIN_STRING.match(value) and value.lower() not in _YAML_WORDS
        return value if plain else json.dumps(value)
    if isinstance(value, (dict, list, tuple)) and not value:
        return "{}" if isinstance(value, dict) else "[]"
    raise TypeError(f"cannot write {type(value).__name__} as YAML")


def _is_block(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple)) and bool(value)


def _key(key: str) -> str:
    return key if _PLAIN_KEY.match(key) else json.dumps(key)


def _lines(value: Any, indent: int) -> Iterator[str]:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if _is_block(item):
                yield f"{pad}{_key(key)}:"
                yield from _lines(item, indent + 2)
            else:
                yield f"{pad}{_key(key)}: {_scalar(item)}"
    elif isinstance(value, (list, tuple)):
        for item in value:
            if not _is_block(item):
                yield f"{pad}- {_scalar(item)}"
                continue
            nested = list(_lines(item, indent + 2))
            yield f"{pad}- {nested[0][indent + 2:]}"
            yield from nested[1:]
    else:
        yield f"{pad}{_scalar(value)}"
