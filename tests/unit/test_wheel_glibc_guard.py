"""The glibc guard of ``scripts/package`` (``scripts/wheel_glibc_guard.py``), its pure part:
GLIBC_x.y version names -> the newest glibc a binary needs, platform tags -> the glibc they
allow, and the verdict naming the symbol and the tag. Reading real ELF files (the host-built
driver, a gcc-built program, the zig-built wheel) is in ``integration/test_wheel_manylinux.py``."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

GUARD_PATH = Path(__file__).resolve().parents[2] / "scripts" / "wheel_glibc_guard.py"
WHEEL_TAG = "manylinux_2_17_x86_64.manylinux2014_x86_64"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wheel_glibc_guard", GUARD_PATH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through it
    spec.loader.exec_module(module)
    return module


guard = _load()
Need = guard.Need

#: What the host-built driver (bookworm, glibc 2.36) needs, a sample of ``objdump -T``.
HOST_BUILT = [
    Need("memcpy", "GLIBC_2.14"),
    Need("__libc_start_main", "GLIBC_2.34"),
    Need("pthread_create", "GLIBC_2.34"),
    Need("fstat64", "GLIBC_2.33"),
    Need("log", "GLIBC_2.29", "libm.so.6"),
    Need("_Unwind_Resume", "GCC_3.0", "libgcc_s.so.1"),
    Need(None, "GLIBC_2.2.5"),
]
#: What a binary linked against glibc 2.17 needs.
OLD_GLIBC = [Need("memcpy", "GLIBC_2.14"), Need("__libc_start_main", "GLIBC_2.2.5"), Need(None, "GLIBC_2.17")]


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("GLIBC_2.34", (2, 34)),
        ("GLIBC_2.2.5", (2, 2, 5)),
        ("GLIBC_2.17", (2, 17)),
        ("GLIBC_PRIVATE", None),
        ("GCC_3.0", None),
        ("GLIBCXX_3.4.29", None),
        ("GLIBC_", None),
    ],
)
def test_glibc_version_names(name, version):
    assert guard.glibc_version(name) == version


def test_newest_glibc_compares_versions_as_numbers_not_text():
    assert guard.newest_glibc([Need("a", "GLIBC_2.9"), Need("b", "GLIBC_2.10"), Need("c", "GLIBC_2.2.5")]) == (2, 10)
    assert guard.newest_glibc(HOST_BUILT) == (2, 34)
    assert guard.newest_glibc([Need("x", "GCC_4.2.0")]) is None
    assert guard.newest_glibc([]) is None


@pytest.mark.parametrize(
    ("tag", "glibc"),
    [
        ("manylinux_2_17_x86_64", (2, 17)),
        ("manylinux2014_x86_64", (2, 17)),
        ("manylinux2014_aarch64", (2, 17)),
        ("manylinux2010_x86_64", (2, 12)),
        ("manylinux1_x86_64", (2, 5)),
        ("manylinux_2_34_x86_64", (2, 34)),
        ("manylinux_2_28_aarch64", (2, 28)),
        ("linux_x86_64", None),
        ("musllinux_1_2_x86_64", (0, 0)),
        ("any", None),
    ],
)
def test_tag_glibc(tag, glibc):
    assert guard.tag_glibc(tag) == glibc


def test_a_tag_set_allows_its_oldest_glibc():
    assert guard.platforms_glibc(WHEEL_TAG.split(".")) == (2, 17)
    assert guard.platforms_glibc(["manylinux_2_28_x86_64", "manylinux_2_17_x86_64"]) == (2, 17)


@pytest.mark.parametrize("tags", [["linux_x86_64"], ["manylinux_2_17_x86_64", "linux_x86_64"], []])
def test_a_tag_promising_no_glibc_cannot_be_checked(tags):
    with pytest.raises(guard.GlibcGuardError, match="promise no glibc"):
        guard.platforms_glibc(tags)


def test_too_new_lists_the_newest_first_and_ignores_other_libraries_versions():
    over = guard.too_new(HOST_BUILT, (2, 17))
    assert [str(need) for need in over] == [
        "__libc_start_main@GLIBC_2.34",
        "pthread_create@GLIBC_2.34",
        "fstat64@GLIBC_2.33",
        "log@GLIBC_2.29",
    ]
    assert guard.too_new(HOST_BUILT, (2, 36)) == []
    assert guard.too_new(OLD_GLIBC, (2, 17)) == []


def test_the_guard_fails_a_host_built_binary_for_manylinux2014_naming_symbol_and_tag():
    with pytest.raises(guard.GlibcGuardError) as caught:
        guard.check("netperf-driver", HOST_BUILT, WHEEL_TAG)
    message = str(caught.value)
    assert "netperf-driver needs glibc 2.34 for __libc_start_main@GLIBC_2.34 from libc.so.6" in message
    assert "(and 3 more: pthread_create@GLIBC_2.34, fstat64@GLIBC_2.33, log@GLIBC_2.29)" in message
    assert f"but the tag {WHEEL_TAG} allows glibc 2.17 at most" in message


def test_a_version_need_without_a_symbol_still_counts():
    """The loader checks every entry of .gnu.version_r, bound to a symbol or not."""
    with pytest.raises(guard.GlibcGuardError, match=r"glibc 2\.18 for GLIBC_2\.18 \(no symbol\)"):
        guard.check("prog", [Need(None, "GLIBC_2.18")], WHEEL_TAG)


def test_the_guard_passes_a_binary_within_the_tag():
    assert guard.check("netperf-driver", OLD_GLIBC, WHEEL_TAG) == (
        f"netperf-driver: needs glibc 2.17 <= 2.17 ({WHEEL_TAG}): ok"
    )
    assert guard.check("netperf-driver", HOST_BUILT, "manylinux_2_34_x86_64").endswith("ok")
    assert "needs no versioned glibc symbol" in guard.check("static", [], WHEEL_TAG)


def test_a_musllinux_tag_allows_no_glibc_symbol():
    """A musllinux wheel's binary (Rust's x86_64-unknown-linux-musl: static) needs no glibc."""
    assert guard.check("netperf-driver", [], "musllinux_1_2_x86_64") == (
        "netperf-driver: needs no versioned glibc symbol (musllinux_1_2_x86_64): ok"
    )
    with pytest.raises(guard.GlibcGuardError, match="but the tag musllinux_1_2_x86_64 allows no glibc at all"):
        guard.check("netperf-driver", OLD_GLIBC, "musllinux_1_2_x86_64")


def test_a_host_tagged_wheel_is_refused_before_reading_its_binaries(tmp_path):
    """``linux_x86_64`` (setuptools' tag before auditwheel) promises nothing to check against."""
    wheel = tmp_path / "pytest_netperf-0.1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pytest_netperf/__init__.py", "")
    with pytest.raises(guard.GlibcGuardError, match="promise no glibc"):
        guard.check_wheel(wheel)


def test_a_wheel_without_a_binary_is_refused(tmp_path):
    wheel = tmp_path / f"pytest_netperf-0.1.0-py3-none-{WHEEL_TAG}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pytest_netperf/__init__.py", "")
    with pytest.raises(guard.GlibcGuardError, match="holds no ELF file"):
        guard.check_wheel(wheel)
    assert guard.main([str(wheel)]) == 1
    assert guard.main([]) == 2
