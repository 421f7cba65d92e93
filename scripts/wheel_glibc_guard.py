"""Fail a wheel whose ELF binaries need a newer glibc than its platform tag promises.

``python3 scripts/wheel_glibc_guard.py WHEEL...`` (``scripts/package`` runs it before anything is
written to dist/): for every ELF file in the wheel, the versioned symbols it needs from glibc
(``GLIBC_x.y`` in ``.gnu.version_r``, read with pyelftools, auditwheel's own ELF reader) must
not exceed the glibc of the wheel's manylinux tag (``manylinux_2_17_x86_64``,
``manylinux2014_x86_64`` -> 2.17; a musllinux tag allows none). Exit 1 naming the symbol, the
version and the tag when one does; 0 with one line per binary when all fit.

The pure part (version names -> the newest glibc, tags -> glibc) is tested in
``tests/unit/test_wheel_glibc_guard.py``; the ELF reading in
``tests/integration/test_wheel_manylinux.py``. This file is a build helper, not part of the
package: it does not ship in the wheel.
"""

from __future__ import annotations

import functools
import io
import re
import sys
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
#: The glibc each legacy manylinux alias stands for (PEP 513, 571, 599); PEP 600 tags name theirs.
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_PEP600 = re.compile(r"^manylinux_(\d+)_(\d+)_\w+$")
_LEGACY = re.compile(r"^(manylinux1|manylinux2010|manylinux2014)_\w+$")
_GLIBC = re.compile(r"^GLIBC_(\d+(?:\.\d+)+)$")
_MUSL = re.compile(r"^musllinux_\d+_\d+_\w+$")
#: What a musllinux tag allows of glibc: nothing (every GLIBC_x.y is newer than 0.0).
NO_GLIBC = (0, 0)


class GlibcGuardError(Exception):
    """The wheel cannot be judged, or a binary in it needs a newer glibc than its tag allows."""


@dataclass(frozen=True)
class Need:
    """One versioned need of a binary: ``symbol`` (None for a version with no symbol bound to it,
    which the loader checks all the same) at ``version`` (``GLIBC_2.34``) from ``library``."""

    symbol: str | None
    version: str
    library: str = "libc.so.6"

    def __str__(self) -> str:
        return f"{self.symbol}@{self.version}" if self.symbol else f"{self.version} (no symbol)"


def glibc_version(name: str) -> tuple[int, ...] | None:
    """``GLIBC_2.34`` -> (2, 34), ``GLIBC_2.2.5`` -> (2, 2, 5); None for any other version name
    (``GLIBC_PRIVATE``, ``GCC_3.0``, ``GLIBCXX_3.4``)."""
    match = _GLIBC.match(name)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def newest_glibc(needs: Iterable[Need]) -> tuple[int, ...] | None:
    """The newest GLIBC_x.y among ``needs``; None when none is a glibc version."""
    versions = [v for v in (glibc_version(need.version) for need in needs) if v is not None]
    return max(versions) if versions else None


def tag_glibc(platform: str) -> tuple[int, int] | None:
    """The glibc a platform tag promises: ``manylinux_2_17_x86_64`` and ``manylinux2014_x86_64``
    -> (2, 17); ``musllinux_1_2_x86_64`` -> NO_GLIBC (its binaries must need none); None for a tag
    that promises nothing (``linux_x86_64``)."""
    if _MUSL.match(platform):
        return NO_GLIBC
    if match := _PEP600.match(platform):
        return int(match.group(1)), int(match.group(2))
    if match := _LEGACY.match(platform):
        return LEGACY_MANYLINUX[match.group(1)]
    return None


def platforms_glibc(platforms: Iterable[str]) -> tuple[int, int]:
    """The glibc a wheel's platform tags allow: the oldest of them (the wheel claims to run on
    every one); NO_GLIBC for musllinux. GlibcGuardError when a tag promises nothing to check against."""
    tags = sorted(set(platforms))
    found = {tag: tag_glibc(tag) for tag in tags}
    unknown = [tag for tag, glibc in found.items() if glibc is None]
    if not tags or unknown:
        raise GlibcGuardError(
            f"platform tag(s) {unknown or tags} promise no glibc version (nor musl); cannot check against them"
        )
    return min(glibc for glibc in found.values() if glibc is not None)


def too_new(needs: Iterable[Need], allowed: tuple[int, ...]) -> list[Need]:
    """The needs whose GLIBC_x.y is newer than ``allowed``, newest first, then by symbol."""
    over = [need for need in needs if (v := glibc_version(need.version)) is not None and v > allowed]
    return sorted(over, key=lambda need: (tuple(-p for p in glibc_version(need.version) or ()), str(need)))


def _dotted(version: Sequence[int]) -> str:
    return ".".join(str(part) for part in version)


def check(binary: str, needs: Sequence[Need], platform_tag: str) -> str:
    """One line on ``binary`` when it fits ``platform_tag`` (``manylinux_2_17_x86_64.manylinux2014_x86_64``,
    several tags joined by dots as in a wheel name); GlibcGuardError naming the symbols otherwise."""
    allowed = platforms_glibc(platform_tag.split("."))
    newest = newest_glibc(needs)
    over = too_new(needs, allowed)
    if over:
        first = over[0]
        listed = ", ".join(str(need) for need in over[1:6]) + (", …" if len(over) > 6 else "")
        more = f" (and {len(over) - 1} more: {listed})" if len(over) > 1 else ""
        limit = "no glibc at all" if allowed == NO_GLIBC else f"glibc {_dotted(allowed)} at most"
        raise GlibcGuardError(
            f"{binary} needs glibc {_dotted(glibc_version(first.version) or ())} for {first} from {first.library}"
            f"{more}, but the tag {platform_tag} allows {limit}"
        )
    if allowed == NO_GLIBC:
        return f"{binary}: needs no versioned glibc symbol ({platform_tag}): ok"
    needed = f"needs glibc {_dotted(newest)}" if newest else "needs no versioned glibc symbol"
    return f"{binary}: {needed} <= {_dotted(allowed)} ({platform_tag}): ok"


def elf_needs(data: bytes) -> list[Need]:
    """Every versioned need of the ELF image ``data`` (``.gnu.version_r``), each with the
    undefined dynamic symbols bound to it (``.gnu.version``); needs no symbol uses come once with
    ``symbol=None``. Reads with pyelftools (installed with auditwheel)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import SymbolTableSection

    elf = ELFFile(io.BytesIO(data))
    versions: dict[int, tuple[str, str]] = {}  # version index -> (version name, library)
    versym = None
    for section in elf.iter_sections():
        if isinstance(section, GNUVerNeedSection):
            for verneed, auxiliaries in section.iter_versions():
                for aux in auxiliaries:
                    versions[aux["vna_other"]] = (str(aux.name), str(verneed.name))
        elif isinstance(section, GNUVerSymSection):
            versym = section
    needs: list[Need] = []
    used: set[int] = set()
    if versym is not None:
        dynsym = elf.get_section(versym["sh_link"])
        assert isinstance(dynsym, SymbolTableSection), f".gnu.version links to {dynsym.name}, not a symbol table"
        for index, symbol in enumerate(dynsym.iter_symbols()):
            ndx = versym.get_symbol(index)["ndx"]
            if isinstance(ndx, int) and (ndx & 0x7FFF) in versions and symbol["st_shndx"] == "SHN_UNDEF":
                name, library = versions[ndx & 0x7FFF]
                needs.append(Need(str(symbol.name), name, library))
                used.add(ndx & 0x7FFF)
    needs += [Need(None, name, library) for index, (name, library) in versions.items() if index not in used]
    return needs


def check_wheel(wheel: Path) -> list[str]:
    """Check every ELF file of ``wheel`` against its platform tags; one line per binary."""
    parts = wheel.name.removesuffix(".whl").split("-")
    if len(parts) not in (5, 6):
        raise GlibcGuardError(f"{wheel.name} is not a wheel file name (name-version[-build]-python-abi-platform.whl)")
    platform_tag = parts[-1]
    platforms_glibc(platform_tag.split("."))  # a tag promising no glibc fails before any reading
    lines: list[str] = []
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            data = archive.read(member)
            if data.startswith(ELF_MAGIC):
                lines.append(check(f"{wheel.name}:{member}", elf_needs(data), platform_tag))
    if not lines:
        raise GlibcGuardError(f"{wheel.name} holds no ELF file; expected the netperf-driver binary")
    return lines


def main(argv: Sequence[str]) -> int:
    """``WHEEL...``: check each wheel; ``--binary FILE PLATFORM_TAG``: check one binary against a tag."""
    jobs: list[Callable[[], list[str]]]
    if argv[:1] == ["--binary"] and len(argv) == 3:
        binary, tag = argv[1], argv[2]
        jobs = [lambda: [check(binary, elf_needs(Path(binary).read_bytes()), tag)]]
    elif argv and not argv[0].startswith("-"):
        jobs = [functools.partial(check_wheel, Path(name)) for name in argv]
    else:
        print("usage: wheel_glibc_guard.py WHEEL... | --binary FILE PLATFORM_TAG", file=sys.stderr)
        return 2
    status = 0
    for job in jobs:
        try:
            for line in job():
                print(f"glibc guard: {line}")
        except GlibcGuardError as exc:
            print(f"glibc guard: FAIL: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
