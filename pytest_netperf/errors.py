"""Exceptions shared by the core. None of them import pytest."""

from __future__ import annotations


class NetperfError(Exception):
    """Base class for every error pytest-netperf raises on purpose."""


class BudgetSyntaxError(NetperfError):
    """A budget string does not parse; the message names the text and the problem."""


class DriverNotFoundError(NetperfError):
    """The driver binary or tool is not installed; the message says how to install it."""


class DriverError(NetperfError):
    """The driver ran but could not measure (bad flags, unreachable target, crash)."""


class LoadOptionError(NetperfError, ValueError):
    """A load option of ``measure()``/``compare()`` is unknown or out of range, or options do
    not fit together; names them (``pytest_netperf.measure.load_options`` checks them)."""


class InvalidMeasurement(NetperfError):
    """A round was measured but must not be judged (saturated driver, errors, …)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CgroupError(NetperfError):
    """What a container of the system under test spent cannot be read; names the path or container."""


class ServiceRestarted(CgroupError):
    """A container of the system under test restarted during a round (its counters were reset);
    names it, with its restart count and exit where Docker shows them."""


class BaselineError(NetperfError):
    """A baseline file is corrupt, of an unknown version, or cannot be written."""


class RuntimeUnavailable(NetperfError):
    """The Docker daemon (or another runtime) is missing or stopped."""


class ImageMissingError(NetperfError):
    """A container image needed by a topology is absent; names the image and the fix."""


class MarkerError(NetperfError):
    """A ``netperf`` marker argument is unknown or has an invalid value; names both."""


class ComposeError(NetperfError):
    """A Compose stack could not be read, built, started or used; names the file, service or port."""


class ComposeUnavailable(RuntimeUnavailable):
    """No Compose implementation (``docker compose`` v2 or ``docker-compose`` v1) can be run."""


class ComposeFileError(ComposeError):
    """A Compose file is missing or invalid; names the file and quotes Compose's own message."""


class ComposeStartError(ComposeError):
    """A Compose stack did not come up: a failing build or ``up``, a service that exited or
    stayed unhealthy; carries the exit code, health output and log tail where there are any."""


class ComposeUsageError(ComposeError):
    """An unknown service, port or resource key was asked of a Compose stack; lists the known ones."""


class RevisionError(NetperfError):
    """A base revision (``--netperf-base``) cannot be resolved, materialised or compared; says what to fetch."""


class StackUnchanged(NetperfError):
    """Under ``--netperf-base-skip-unchanged``: a stack's inputs are the same at the base
    revision, so there is nothing to compare; the test is skipped with this reason."""
