"""Machine classes: which stored baselines were measured on a machine like this one.

A baseline is a reference only on the kind of machine it was measured on: the same CPU
model and the same number of logical cores (measured here: the same gates reached
0.57-0.73x of a Xeon's throughput on an EPYC). The class is a readable slug of those two,
``amd-epyc-7b13-2c``; a user whose runners differ in ways the slug cannot see (a cloud
instance type, a CI runner label) names the class with ``--netperf-machine-class``.
Baselines live in one folder per class, so a repository can hold several runner types.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Optional

#: The fingerprint key a baseline stores its machine class under (when it was named).
CLASS_KEY = "machine_class"
#: Words of CPU model names that say nothing about speed.
_NOISE_WORDS = re.compile(r"\((r|tm)\)|\b(cpu|processor|with radeon graphics|\d+-core)\b", re.IGNORECASE)
_CLOCK = re.compile(r"@\s*[\d.]+\s*[gm]hz", re.IGNORECASE)
_UNSAFE = re.compile(r"[^a-z0-9]+")
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_SLUG = 48


def machine_class(fingerprint: Mapping[str, Any]) -> str:
    """The class a fingerprint belongs to: its stored name, else the slug of CPU model and cores."""
    named = fingerprint.get(CLASS_KEY)
    if isinstance(named, str) and _NAME.match(named):
        return named
    return derived_class(fingerprint)


def derived_class(fingerprint: Mapping[str, Any]) -> str:
    """``Intel(R) Xeon(R) CPU @ 2.20GHz`` with 2 cores -> ``intel-xeon-2c``; ``unknown-cpu`` without a model."""
    model = str(fingerprint.get("cpu_model") or "")
    model = _CLOCK.sub(" ", _NOISE_WORDS.sub(" ", model))
    slug = _UNSAFE.sub("-", model.lower()).strip("-")[:MAX_SLUG].strip("-") or "unknown-cpu"
    cores = fingerprint.get("logical_cores")
    return f"{slug}-{cores}c" if isinstance(cores, int) and not isinstance(cores, bool) else slug


def check_class_name(name: str) -> str:
    """``name`` when it can be a folder of the baseline directory; ValueError otherwise."""
    if not _NAME.match(name):
        raise ValueError(
            f"machine class {name!r}: use 1-64 characters of a-z, 0-9, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return name


def resolve_class(named: Optional[str], fingerprint: Optional[Mapping[str, Any]] = None) -> str:
    """The class of this run: the name the user gave, else the one derived from ``fingerprint``
    (default: this machine's CPU model and core count)."""
    if named:
        return check_class_name(named)
    if fingerprint is None:
        from pytest_netperf.baseline.fingerprint import cpu_model

        fingerprint = {"cpu_model": cpu_model(), "logical_cores": os.cpu_count()}
    return derived_class(fingerprint)
