"""The package's layers hold: no import cycle among its modules, and no import up a layer.

Imports are read with ``ast`` from every module of ``pytest_netperf/`` (imports inside
functions and under ``TYPE_CHECKING`` included), so a cycle cannot hide in a lazy import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_netperf"

#: Bottom to top; a module may import its own layer and the layers below it. ``(root)`` is
#: the public API (``pytest_netperf/__init__.py``), which gathers names from every layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "defaults", "atomic_file", "version", "tls_options", "cpusets"),
    ("engine", "results"),
    ("budget", "topology"),
    ("images", "revision"),
    ("runtime",),
    ("drivers",),
    ("verdict",),
    ("measure",),
    ("baseline",),
    ("report",),
    ("settings", "starter"),
    ("plugin", "cli"),
    ("(root)",),
)


def module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports (``from pkg import module`` resolves to the module)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                module = ".".join(anchor + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # ``from pkg import module`` imports that module; ``from module import name`` the module
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("pytest_netperf"):
                found.add(target)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = module_names()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle as a list of modules (empty when there is none)."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return []


def layer_of(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "(root)"
    for index, names in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"{module}: its package {top!r} is in no layer of LAYERS; place it there")


def test_the_reader_sees_imports_inside_functions_and_type_checking_blocks(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_netperf.measure.gate import Gate\n"
        "def f():\n    from pytest_netperf.budget import metrics\n"
    )
    known = module_names()
    assert imports_of("pytest_netperf.probe", source, known) == {
        "pytest_netperf.measure.gate",
        "pytest_netperf.budget.metrics",
    }


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle_among_the_package_modules(graph: dict[str, set[str]]) -> None:
    cycle = find_cycle(graph)
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_every_import_goes_down_the_layers(graph: dict[str, set[str]]) -> None:
    upward = [
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert not upward, "imports up a layer:\n" + "\n".join(upward)


def test_the_core_imports_no_pytest(graph: dict[str, set[str]]) -> None:
    core = [m for m in graph if layer_of(m) < layer_of("pytest_netperf.plugin")]
    offenders = []
    for module in core:
        tree = ast.parse(module_names()[module].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "pytest" or n.startswith(("pytest.", "_pytest")) for n in names):
                offenders.append(module)
    assert not offenders, f"the core imports pytest: {sorted(set(offenders))}"


#: Distributions the plugin needs that the Locust worker image does not hold (it has locust,
#: hdrhistogram, psutil and what they pull in: images/locust_inputs.py).
NOT_IN_THE_WORKER_IMAGE = ("docker", "numpy", "scipy", "matplotlib", "yaml", "tabulate", "pytest", "_pytest", "pluggy")


def test_the_locust_worker_imports_with_the_worker_image_distributions_only() -> None:
    """The Locust worker image holds the package's sources with the worker's distributions
    only: the public API, the CLI and the worker must import without the plugin's others."""
    probe = (
        "import sys\n"
        f"BLOCKED = {NOT_IN_THE_WORKER_IMAGE!r}\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ImportError('not in the worker image: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import pytest_netperf, pytest_netperf.cli.main, pytest_netperf.drivers.locust.worker_service\n"
    )
    command = [sys.executable, "-c", probe]
    done = subprocess.run(command, capture_output=True, text=True, cwd=PACKAGE.parent, check=False)
    assert done.returncode == 0, done.stderr
