"""Resource controls of a container (CPU quota, CPU set, memory limit): plain data of a topology.

One vocabulary for both runtimes: :meth:`Resources.docker_options` feeds ``containers.create``
(built-in topologies, file-backed nodes), :meth:`Resources.compose_keys` a Compose override
(a team's stack).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_netperf.cpusets import is_cpuset

_MEMORY = re.compile(r"^(\d+)([bkmg]?)$", re.IGNORECASE)
_MEMORY_FACTORS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


@dataclass(frozen=True)
class Resources:
    """Limits for one container; None leaves a limit unset (the Compose file's own value stays)."""

    cpus: float | None = None
    cpuset: str | None = None
    memory: str | None = None

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError("invalid resources: " + "; ".join(problems))

    def problems(self) -> list[str]:
        """Everything wrong with these values (empty when valid)."""
        problems: list[str] = []
        if self.cpus is not None and not (isinstance(self.cpus, (int, float)) and self.cpus > 0):
            problems.append(f"cpus must be a positive number, got {self.cpus!r}")
        if self.cpuset is not None and not is_cpuset(str(self.cpuset)):
            problems.append(f"cpuset must look like '0-1' or '0,2', got {self.cpuset!r}")
        if self.memory is not None and memory_bytes(self.memory) is None:
            problems.append(f"memory must look like '512m' or '2g', got {self.memory!r}")
        return problems

    @property
    def empty(self) -> bool:
        """True when no limit is set."""
        return self.cpus is None and self.cpuset is None and self.memory is None

    def docker_options(self) -> dict[str, Any]:
        """Keyword arguments for docker-py's ``containers.create``."""
        options: dict[str, Any] = {}
        if self.cpus is not None:
            options["nano_cpus"] = round(self.cpus * 1e9)
        if self.cpuset is not None:
            options["cpuset_cpus"] = self.cpuset
        if self.memory is not None:
            options["mem_limit"] = memory_bytes(self.memory)
        return options

    def compose_keys(self) -> dict[str, Any]:
        """Service keys for a Compose override file (``cpus``, ``cpuset``, ``mem_limit``)."""
        keys: dict[str, Any] = {}
        if self.cpus is not None:
            keys["cpus"] = float(self.cpus)
        if self.cpuset is not None:
            keys["cpuset"] = self.cpuset
        if self.memory is not None:
            keys["mem_limit"] = str(self.memory).lower()
        return keys

    def merged(self, other: Resources | None) -> Resources:
        """These limits with ``other``'s set values on top."""
        if other is None:
            return self
        return Resources(
            cpus=other.cpus if other.cpus is not None else self.cpus,
            cpuset=other.cpuset if other.cpuset is not None else self.cpuset,
            memory=other.memory if other.memory is not None else self.memory,
        )

    def describe(self) -> str:
        """``cpus 1.5, cpuset 2-3, memory 256m`` (``no limits`` when empty)."""
        parts = []
        if self.cpus is not None:
            parts.append(f"cpus {self.cpus:g}")
        if self.cpuset is not None:
            parts.append(f"cpuset {self.cpuset}")
        if self.memory is not None:
            parts.append(f"memory {self.memory}")
        return ", ".join(parts) or "no limits"

    @classmethod
    def from_mapping(cls, value: Resources | Mapping[str, Any] | None) -> Resources:
        """Accept a Resources or a dict with keys cpus, cpuset, memory (``mem_limit`` too)."""
        if value is None:
            return cls()
        if isinstance(value, Resources):
            return value
        known = {"cpus", "cpuset", "memory", "mem_limit"}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown resource key(s) {', '.join(unknown)}; known: cpus, cpuset, memory")
        memory = value.get("memory", value.get("mem_limit"))
        cpus = value.get("cpus")
        return cls(
            cpus=float(cpus) if isinstance(cpus, (int, float, str)) and str(cpus).strip() else None,
            cpuset=None if value.get("cpuset") is None else str(value["cpuset"]),
            memory=None if memory is None else str(memory),
        )


def memory_bytes(value: str | int) -> int | None:
    """``512m`` -> 536870912; None when the text is not a memory size."""
    if isinstance(value, int):
        return value if value > 0 else None
    match = _MEMORY.match(str(value).strip())
    if not match or int(match.group(1)) <= 0:
        return None
    return int(match.group(1)) * _MEMORY_FACTORS[match.group(2).lower()]
