"""Failure explanations from Locust's stderr/stdout (text as Locust 2.x writes it)."""

from __future__ import annotations

from pytest_netperf.drivers.locust import diagnosis

IMPORT_TRACEBACK = """\
[2026-01-01 10:00:00,000] vm/INFO/locust.main: Starting Locust 2.47.0
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/locust/util/load_locustfile.py", line 61, in load_locustfile
    loader.exec_module(imported)
  File "<frozen importlib._bootstrap_external>", line 940, in exec_module
  File "/srv/tests/flows.py", line 3, in <module>
    import not_there
ModuleNotFoundError: No module named 'not_there'
"""

SYNTAX_TRACEBACK = """\
Traceback (most recent call last):
  File "/srv/tests/broken.py", line 7
    x = (
        ^
SyntaxError: '(' was never closed
"""

MASTER_GAVE_UP = """\
[t] vm/INFO/locust.main: Starting Locust 2.47.0
[t] vm/INFO/locust.runners: vm_1 (index 0) reported as ready. 1 workers connected.
[t] vm/INFO/locust.runners: vm_2 (index 1) reported as ready. 2 workers connected.
[t] vm/ERROR/locust.main: Gave up waiting for workers to connect
"""


def test_import_failure_names_file_line_and_exception() -> None:
    assert diagnosis.import_failure(IMPORT_TRACEBACK, "/srv/tests/flows.py") == (
        "/srv/tests/flows.py:3: ModuleNotFoundError: No module named 'not_there'"
    )


def test_syntax_error_is_an_import_failure() -> None:
    assert diagnosis.import_failure(SYNTAX_TRACEBACK, "/srv/tests/broken.py") == (
        "/srv/tests/broken.py:7: SyntaxError: '(' was never closed"
    )


def test_no_traceback_is_no_import_failure() -> None:
    assert diagnosis.import_failure(MASTER_GAVE_UP, "/srv/x.py") is None


def test_unknown_user_classes_and_listing() -> None:
    stderr = "[t] vm/ERROR/locust.main: Unknown User(s): Zed, Qux\n"
    assert diagnosis.unknown_user_classes(stderr) == ["Zed", "Qux"]
    assert diagnosis.unknown_user_classes(MASTER_GAVE_UP) is None
    listing = "[t] vm/INFO/locust.main: Starting\nAvailable Users:\n    Shopper\n    Browser\n"
    assert diagnosis.listed_user_classes(listing) == ["Shopper", "Browser"]
    assert diagnosis.listed_user_classes("nothing listed") == []


def test_workers_connected_when_the_master_gave_up() -> None:
    assert diagnosis.gave_up_on_workers(MASTER_GAVE_UP) == 2
    assert diagnosis.gave_up_on_workers("Gave up waiting for workers to connect") == 0
    assert diagnosis.gave_up_on_workers(IMPORT_TRACEBACK) is None


def test_listener_refusal_and_last_lines() -> None:
    assert diagnosis.listener_refusal("x\nnetperf: shapes are not supported\n") == "shapes are not supported"
    assert diagnosis.listener_refusal("x\n") is None
    assert diagnosis.last_lines("a\n\nb\nc\n", 2) == "b\nc"
