"""Reading what valgrind's callgrind wrote with ``--separate-callers=N`` (pure text parsing).

With ``--separate-callers=N`` callgrind keeps a function's cost apart per calling context: a
function is written as ``leaf'caller1'caller2'…`` (up to N callers), so the self cost of each
context is the cost of one call stack, ``callerN;…;caller1;leaf`` in folded form. The file
format (valgrind's "Callgrind Format Specification"):

- name compression: ``fn=(12) name`` defines id 12, a later ``fn=(12)`` refers to it; ids are
  shared by ``fn``/``cfn`` (functions), ``fl``/``fi``/``fe``/``cfi``/``cfl`` (files) and
  ``ob``/``cob`` (objects);
- cost lines: positions (absolute, ``+n``, ``-n`` or ``*``; as many as ``positions:`` names)
  then one number per event of ``events:``; a cost line right after ``calls=`` is the
  inclusive cost of that call (already counted in the callee's own lines), not self cost;
- ``summary:`` (header) or ``totals:`` (end): the process's total.

Code without a symbol is a hex address (``0x0000000000012340``) in callgrind, ``???`` in
cachegrind; both are named ``??? [where]`` like :func:`~pytest_netperf.runtime.trace_output.cachegrind_counts`
names them: by source file when known, else by the object (``??? [libpcre2-8.so.0]``), else by
the program of the process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_netperf.runtime.trace_output import UNRESOLVED, TraceOutputError

#: A frame callgrind could not name: the address of its code.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+$")
#: Separates a function from its callers in a context name.
CALLER_SEPARATOR = "'"
#: Separates frames in a folded stack.
FRAME_SEPARATOR = ";"
_NAME_KINDS = {
    "fn": "fn",
    "cfn": "fn",
    "fl": "fl",
    "fi": "fl",
    "fe": "fl",
    "cfi": "fl",
    "cfl": "fl",
    "ob": "ob",
    "cob": "ob",
}
_COMPRESSED = re.compile(r"\((\d+)\)\s*(.*)$")


@dataclass
class CallgrindProfile:
    """One process's callgrind file read: its total and its self cost by folded call stack."""

    total: float
    #: ``root;…;leaf`` -> instructions (self cost of the leaf in that calling context)
    stacks: dict[str, float] = field(default_factory=dict)

    def by_leaf(self) -> dict[str, float]:
        """Instructions by function (the stacks' self cost summed by their leaf)."""
        return by_leaf(self.stacks)


def by_leaf(stacks: Mapping[str, float]) -> dict[str, float]:
    """``root;…;leaf`` -> cost summed by leaf frame."""
    out: dict[str, float] = {}
    for stack, value in stacks.items():
        leaf = stack.rsplit(FRAME_SEPARATOR, 1)[-1]
        out[leaf] = out.get(leaf, 0.0) + value
    return out


class _Names:
    """The name tables of one file (``(id) name`` compression)."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, str]] = {"fn": {}, "fl": {}, "ob": {}}

    def read(self, key: str, value: str) -> str:
        """The name ``key=value`` sets, defining or looking up a compressed id."""
        table = self.tables[_NAME_KINDS[key]]
        match = _COMPRESSED.match(value)
        if match is None:
            return value
        ident, name = match.groups()
        if name:
            table[ident] = name
            return name
        if ident not in table:
            raise TraceOutputError(f"a callgrind file refers to {key}=({ident}) before naming it")
        return table[ident]


def callgrind_profile(text: str) -> CallgrindProfile:
    """The total and the folded stacks of one ``callgrind.out`` file.

    Each stack is rooted at the program of the process (``nginx;main;…;leaf``), so the master
    and the workers, or a start script and its server, stay apart in a picture.
    """
    names = _Names()
    program = UNRESOLVED
    event = 0
    positions = 1
    totals: dict[str, float] = {}
    context = obj = source = function_file = None
    after_call = False
    raw: dict[tuple[str, str, str], float] = {}
    objects: dict[str, tuple[str, str]] = {}  # an unnamed frame's address -> (object, file) where it was a leaf
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            if context is None:
                continue
            if after_call:  # the inclusive cost of the call just named: the callee counts it
                after_call = False
                continue
            parts = line.split()
            if len(parts) > positions + event:
                where = (context, obj or UNRESOLVED, source or UNRESOLVED)
                raw[where] = raw.get(where, 0.0) + float(parts[positions + event])
            continue
        key, sep, value = line.partition("=")
        if sep and key in _NAME_KINDS:
            name = names.read(key, value)
            if key == "fn":
                context, source = name, function_file  # an inlined file (fi=, fe=) ends with its function
            elif key == "ob":
                obj = name
            elif key == "fl":
                source = function_file = name
            elif key in ("fi", "fe"):
                source = name
            continue
        if line.startswith("calls="):
            after_call = True
        elif line.startswith("cmd:"):
            words = line[4:].split()
            program = words[0].rsplit("/", 1)[-1] if words else UNRESOLVED
        elif line.startswith("events:"):
            wanted = line[7:].split()
            event = wanted.index("Ir") if "Ir" in wanted else 0
        elif line.startswith("positions:"):
            positions = max(1, len(line[10:].split()))
        elif line.startswith(("summary:", "totals:")):
            label, _, numbers = line.partition(":")
            figures = numbers.split()
            if len(figures) > event:
                totals[label] = float(figures[event])
    total = totals.get("totals", totals.get("summary"))
    if total is None:
        raise TraceOutputError(
            "a callgrind output file has no summary or totals line (the process did not exit cleanly)"
        )
    for name, obj_name, file_name in raw:
        leaf = name.split(CALLER_SEPARATOR, 1)[0]
        if _unnamed(leaf):
            objects.setdefault(leaf, (obj_name, file_name))
    stacks: dict[str, float] = {}
    for (name, obj_name, file_name), cost in raw.items():
        frames = name.split(CALLER_SEPARATOR)
        named = [_frame(frames[0], obj_name, file_name, program)]
        named += [_frame(f, *objects.get(f, (UNRESOLVED, UNRESOLVED)), program) for f in frames[1:]]
        stack = FRAME_SEPARATOR.join([program, *reversed(named)])
        stacks[stack] = stacks.get(stack, 0.0) + cost
    return CallgrindProfile(total, stacks)


def _unnamed(frame: str) -> bool:
    return frame == UNRESOLVED or _ADDRESS.match(frame) is not None


def _frame(frame: str, obj: str, source: str, program: str) -> str:
    """A frame's name in a folded stack: unnamed code as ``??? [where]``, ``;`` never inside."""
    if _unnamed(frame):
        if source != UNRESOLVED:
            where = source
        elif obj != UNRESOLVED:
            where = obj.rsplit("/", 1)[-1]
        else:
            where = program
        frame = f"{UNRESOLVED} [{where}]"
    return frame.replace(FRAME_SEPARATOR, ":")


def merge_callgrind(files: Mapping[str, str]) -> tuple[float, dict[str, float], int]:
    """Every process's callgrind file summed: (total, instructions by folded stack, processes
    with instructions)."""
    total = 0.0
    stacks: dict[str, float] = {}
    processes = 0
    for name, text in sorted(files.items()):
        try:
            profile = callgrind_profile(text)
        except TraceOutputError as exc:
            raise TraceOutputError(f"{name}: {exc}") from None
        total += profile.total
        processes += profile.total > 0
        for stack, value in profile.stacks.items():
            stacks[stack] = stacks.get(stack, 0.0) + value
    return total, stacks, processes
