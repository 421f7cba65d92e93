"""Explain why a Locust run produced no result, from what Locust wrote on stderr/stdout.

Pure text functions, so each failure message can be unit-tested on captured output.
"""

from __future__ import annotations

import re
from typing import Optional

_UNKNOWN_USERS = re.compile(r"Unknown User\(s\): (?P<names>.+)")
_WORKERS_CONNECTED = re.compile(r"reported as ready\. (?P<count>\d+) workers connected")
_EXCEPTION_LINE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b[^\n]*)$")
_FILE_LINE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')


def import_failure(stderr: str, locustfile: Optional[str]) -> Optional[str]:
    """``"<file>:<line>: <ExceptionLine>"`` when stderr holds a traceback from loading the
    locustfile (or the last traceback at all), else None."""
    if "Traceback (most recent call last)" not in stderr:
        return None
    tail = stderr[stderr.rindex("Traceback (most recent call last)") :]
    lines = tail.splitlines()
    exception = next((line.strip() for line in reversed(lines) if _EXCEPTION_LINE.match(line.strip())), None)
    if exception is None:
        exception = next((line.strip() for line in reversed(lines) if line.strip()), "unknown error")
    where = None
    for line in lines:
        match = _FILE_LINE.match(line)
        if match and (locustfile is None or match.group("path").endswith(locustfile.split("/")[-1])):
            where = f"{match.group('path')}:{match.group('line')}"
    return f"{where}: {exception}" if where else exception


def unknown_user_classes(stderr: str) -> Optional[list[str]]:
    """Names Locust reported as ``Unknown User(s)``, or None."""
    match = _UNKNOWN_USERS.search(stderr)
    if match is None:
        return None
    return [name.strip() for name in match.group("names").split(",") if name.strip()]


def listed_user_classes(list_output: str) -> list[str]:
    """Class names from ``locust --list`` output (the indented lines after ``Available Users:``)."""
    if "Available Users:" not in list_output:
        return []
    after = list_output.split("Available Users:", 1)[1]
    names = []
    for line in after.splitlines()[1:]:
        if not line.startswith((" ", "\t")) or not line.strip():
            break
        names.append(line.strip())
    return names


def gave_up_on_workers(stderr: str) -> Optional[int]:
    """How many workers had connected when the master gave up waiting, or None if it didn't."""
    if "Gave up waiting for workers to connect" not in stderr:
        return None
    counts = [int(match.group("count")) for match in _WORKERS_CONNECTED.finditer(stderr)]
    return counts[-1] if counts else 0


def listener_refusal(stderr: str) -> Optional[str]:
    """The netperf listener's own refusal (a line starting ``netperf:``), or None."""
    for line in reversed(stderr.splitlines()):
        if line.startswith("netperf: "):
            return line[len("netperf: ") :].strip()
    return None


def no_user_class(stderr: str) -> bool:
    """True when Locust found no User class at all."""
    return "No User class found" in stderr


def last_lines(text: str, count: int = 8) -> str:
    """The last ``count`` non-empty lines, for error messages."""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-count:])
