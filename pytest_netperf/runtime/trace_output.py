"""Reading what valgrind's cachegrind and ``strace -c`` wrote (pure text parsing)."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_netperf.errors import NetperfError


class TraceOutputError(NetperfError):
    """A tool's output is missing or cannot be read."""


#: What valgrind calls a function or file it has no symbol for.
UNRESOLVED = "???"


def cachegrind_counts(text: str) -> tuple[float, dict[str, float]]:
    """(total instructions, instructions by function) of one ``cachegrind.out`` file.

    The total is the ``summary:`` line; functions sum their ``line count`` rows under ``fn=``.
    Code without a symbol (``fn=???``: a stripped binary or library) is named by its source
    file when cachegrind knows it (``??? [src/foo.c]``), else by the program of the process
    (``??? [haproxy]``, from the ``cmd:`` line), so unresolved code of different programs stays apart.
    """
    total = None
    by_function: dict[str, float] = {}
    function = None
    source = UNRESOLVED
    program = UNRESOLVED
    for line in text.splitlines():
        if line.startswith("fn="):
            function = line[3:]
            if function == UNRESOLVED:
                function = f"{UNRESOLVED} [{source if source != UNRESOLVED else program}]"
        elif line.startswith("fl="):
            source = line[3:]
        elif line.startswith("cmd:"):
            words = line[4:].split()
            program = words[0].rsplit("/", 1)[-1] if words else UNRESOLVED
        elif line.startswith("summary:"):
            total = float(line.split()[1])
        elif function is not None and line[:1].isdigit():
            parts = line.split()
            if len(parts) >= 2:
                by_function[function] = by_function.get(function, 0.0) + float(parts[1])
    if total is None:
        raise TraceOutputError("a cachegrind output file has no summary line (the process did not exit cleanly)")
    return total, by_function


def merge_cachegrind(files: Mapping[str, str]) -> tuple[float, dict[str, float], int]:
    """Every process's cachegrind file summed: (total, by function, processes with instructions)."""
    total = 0.0
    by_function: dict[str, float] = {}
    processes = 0
    for name, text in sorted(files.items()):
        try:
            counted, functions = cachegrind_counts(text)
        except TraceOutputError as exc:
            raise TraceOutputError(f"{name}: {exc}") from None
        total += counted
        processes += counted > 0
        for function, value in functions.items():
            by_function[function] = by_function.get(function, 0.0) + value
    return total, by_function, processes


def strace_counts(text: str) -> tuple[float, dict[str, float]]:
    """(total calls, calls by system call) from a ``strace -c`` summary table."""
    by_call: dict[str, float] = {}
    complete = False
    for line in text.splitlines():
        parts = line.split()
        if parts[-1:] == ["total"]:
            complete = True  # its columns vary between strace versions: the rows are summed instead
        elif len(parts) >= 5 and parts[3].isdigit():
            by_call[parts[-1]] = float(parts[3])
    if not complete:
        raise TraceOutputError("the strace summary has no total row (strace did not exit cleanly)")
    return sum(by_call.values()), by_call


def valgrind_problems(logs: Mapping[str, str]) -> list[str]:
    """Lines of valgrind's logs that mean a process was not counted (an output it could not open:
    cachegrind says "can't open", callgrind "can not open")."""
    found = []
    for name, text in sorted(logs.items()):
        for line in text.splitlines():
            if "can't open" in line or "cannot open" in line or "can not open" in line:
                found.append(f"{name}: {line.strip()}")
    return found
