"""The base revision of a pull request (``--netperf-base REF``): resolve it, materialise its
files, and say which of a stack's inputs differ from the working tree.

Modules: :mod:`.git` (running git, resolving refs), :mod:`.checkout` (REF's files in a session
folder), :mod:`.diff` (a stack's input files and what changed in them), :mod:`.paths`
(repository-relative paths). Importing this package runs nothing.
"""

from __future__ import annotations

from pytest_netperf.errors import RevisionError
from pytest_netperf.revision.checkout import BaseCheckout
from pytest_netperf.revision.diff import FileChange, changed_files, stack_inputs, unchanged
from pytest_netperf.revision.git import ResolvedRef, dirty_paths, repo_root, resolve

__all__ = [
    "BaseCheckout",
    "FileChange",
    "ResolvedRef",
    "RevisionError",
    "changed_files",
    "dirty_paths",
    "repo_root",
    "resolve",
    "stack_inputs",
    "unchanged",
]
