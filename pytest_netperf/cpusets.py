"""Linux cpuset lists (``0-2,5``), as cgroups and ``docker --cpuset-cpus`` write them."""

from __future__ import annotations

import re

_CPUSET = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def is_cpuset(text: str) -> bool:
    """Whether ``text`` is a cpuset list (``0``, ``0-3``, ``0,2-3``)."""
    return bool(_CPUSET.match(text))


def cpuset_text(cores: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    parts: list[str] = []
    for core in sorted(set(cores)):
        if parts and parts[-1].split("-")[-1] == str(core - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{core}"
        else:
            parts.append(str(core))
    return ",".join(parts)


def parse_cpuset(text: str) -> list[int]:
    """``0-2,5`` -> ``[0, 1, 2, 5]``; ValueError for anything else."""
    if not is_cpuset(text.strip()):
        raise ValueError(f"not a cpuset: {text!r}")
    cores: list[int] = []
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        cores.extend(range(int(low), int(high or low) + 1))
    return sorted(set(cores))
