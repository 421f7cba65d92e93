"""Find the host's own Debian mirror, so offline image builds never name a host themselves."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEB822_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
ONE_LINE_SOURCES = Path("/etc/apt/sources.list")


@dataclass(frozen=True)
class AptSource:
    """One ``deb`` source: a mirror URI, the suites it serves and their components."""

    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]


def parse_deb822(text: str) -> list[AptSource]:
    """Parse deb822 ``.sources`` text (stanzas separated by blank lines); keep ``Types: deb``."""
    sources: list[AptSource] = []
    for stanza in _stanzas(text):
        if "deb" not in stanza.get("types", "").split():
            continue
        if stanza.get("enabled", "yes").lower() == "no":
            continue
        for uri in stanza.get("uris", "").split():
            sources.append(
                AptSource(
                    uri=uri.rstrip("/"),
                    suites=tuple(stanza.get("suites", "").split()),
                    components=tuple(stanza.get("components", "").split()),
                )
            )
    return sources


def parse_one_line(text: str) -> list[AptSource]:
    """Parse classic ``sources.list`` lines (``deb [opts] URI suite comp...``)."""
    sources: list[AptSource] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        words = line.split()[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words.pop(0)
            words = words[1:]
        if len(words) >= 2:
            sources.append(AptSource(words[0].rstrip("/"), (words[1],), tuple(words[2:])))
    return sources


def host_sources(deb822_path: Path = DEB822_SOURCES, one_line_path: Path = ONE_LINE_SOURCES) -> list[AptSource]:
    """All ``deb`` sources configured on this host (deb822 file first, then sources.list)."""
    sources: list[AptSource] = []
    if deb822_path.is_file():
        sources += parse_deb822(deb822_path.read_text())
    if one_line_path.is_file():
        sources += parse_one_line(one_line_path.read_text())
    return sources


def mirror_for_suite(suite: str, sources: list[AptSource]) -> str:
    """The first mirror that serves ``suite`` itself (not ``suite-security``/``-updates``).

    Raises LookupError naming the suite when the host has no such source.
    """
    for source in sources:
        if suite in source.suites:
            return source.uri
    raise LookupError(
        f"no apt source on this host serves suite {suite!r} (looked in {DEB822_SOURCES} and {ONE_LINE_SOURCES})"
    )


def _stanzas(text: str) -> list[dict[str, str]]:
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last_key = ""
    for raw in text.splitlines() + [""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if current:
                stanzas.append(current)
            current, last_key = {}, ""
            continue
        if raw[0] in " \t" and last_key:
            current[last_key] += " " + raw.strip()
            continue
        key, _, value = raw.partition(":")
        last_key = key.strip().lower()
        current[last_key] = value.strip()
    return stanzas
