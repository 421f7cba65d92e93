"""The image mapping (``--netperf-image``) applied to the Dockerfiles of ``build:`` services.

A ``build:`` service starts from the images its Dockerfile names (``FROM nginx:1.27``,
``COPY --from=envoyproxy/envoy:v1.31 ...``); where no registry answers, those must be mapped
to local images as a service's ``image:`` is. The Dockerfile is rewritten with the mapped
images into the session's folder and the override file points the build at it
(``build.dockerfile``, an absolute path): the build context stays the team's folder, nothing
in the repository or the local image store changes, and the copy goes with the session.
(Tagging the local image under the FROM name instead would change the machine's image store
for every other build and session, and shadow a real image of that name.)

A FROM line built from a build argument is resolved with the service's ``build.args`` and the
``ARG`` defaults before the first FROM; one that still names an unknown variable cannot be
mapped, and is named (:attr:`Rewritten.unresolved`). Pure, except :func:`mapped_builds`,
which writes the rewritten files.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_netperf.images.resolve import map_image
from pytest_netperf.runtime.compose.project import local_equivalent

__all__ = [
    "FromLine",
    "MappedBuild",
    "Rewritten",
    "base_images",
    "build_args",
    "copied_sources",
    "dockerfile_of",
    "from_lines",
    "image_references",
    "map_dockerfile",
    "mapped_builds",
    "missing_base_message",
    "unmappable_note",
]

_FROM = re.compile(r"^(\s*FROM\s+(?:--\S+\s+)*)(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE)
_COPY_FROM = re.compile(r"^(\s*COPY\s+(?:--\S+\s+)*?--from=)(\S+)", re.IGNORECASE)
_ARG = re.compile(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?", re.IGNORECASE)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
#: What a FROM line may name that is no image.
SCRATCH = "scratch"


@dataclass(frozen=True)
class FromLine:
    """One ``FROM`` instruction: its line (1-based), the image as resolved (or as written when a
    variable is unknown) and the stage name it opens (``AS edge``)."""

    line: int
    image: str
    stage: str | None = None
    resolved: bool = True


@dataclass
class Rewritten:
    """A Dockerfile with the image mapping applied."""

    text: str
    #: (image as the file names it, image it now names, line) for each reference mapped
    changed: list[tuple[str, str, int]] = field(default_factory=list)
    #: (reference as written, line) of image references built from unknown variables
    unresolved: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class MappedBuild:
    """A ``build:`` service whose Dockerfile the mapping changed: the team's file and the copy
    the build uses."""

    source: Path
    dockerfile: Path
    changed: tuple[tuple[str, str, int], ...]


def expand(text: str, values: Mapping[str, str]) -> str | None:
    """``text`` with ``$VAR``, ``${VAR}``, ``${VAR:-word}`` and ``${VAR:+word}`` replaced from
    ``values``; None when a variable without a fallback is unknown."""
    unknown = False

    def one(match: re.Match[str]) -> str:
        nonlocal unknown
        name = match.group(1) or match.group(4)
        value = values.get(name)
        kind, word = match.group(2), match.group(3) or ""
        if kind == "-":
            return value if value else word
        if kind == "+":
            return word if value else ""
        if value is None:
            unknown = True
            return match.group(0)
        return value

    out = _VARIABLE.sub(one, text)
    return None if unknown else out


def _global_args(lines: list[str], given: Mapping[str, str]) -> dict[str, str]:
    """The values of the ARGs declared before the first FROM (their defaults, overridden by ``given``)."""
    values: dict[str, str] = {}
    for line in lines:
        if _FROM.match(line):
            break
        match = _ARG.match(line)
        if match:
            name, default = match.group(1), match.group(2)
            if name in given:
                values[name] = given[name]
            elif default is not None:
                values[name] = default.strip("\"'")
    return values


def from_lines(text: str, args: Mapping[str, str] | None = None) -> list[FromLine]:
    """Every FROM instruction of a Dockerfile, variables resolved where they can be."""
    lines = text.splitlines()
    values = _global_args(lines, args or {})
    out = []
    for number, line in enumerate(lines, start=1):
        match = _FROM.match(line)
        if match:
            written = match.group(2)
            image = expand(written, values)
            out.append(FromLine(number, image or written, match.group(3), image is not None))
    return out


def _references(text: str, args: Mapping[str, str]) -> list[tuple[int, re.Match[str], str | None]]:
    """(line, match, resolved image or None) of each image reference: FROM and COPY --from,
    stage names, stage numbers and ``scratch`` left out."""
    lines = text.splitlines()
    values = _global_args(lines, args)
    stages: set[str] = set()
    out = []
    for number, line in enumerate(lines, start=1):
        match = _FROM.match(line) or _COPY_FROM.match(line)
        if not match:
            continue
        written = match.group(2)
        image = expand(written, values)
        is_from = match.re is _FROM
        if not ((image or written).lower() in stages or (image or written).isdigit() or image == SCRATCH):
            out.append((number, match, image))
        if is_from and match.group(3):
            stages.add(match.group(3).lower())
    return out


def image_references(text: str, args: Mapping[str, str] | None = None) -> list[tuple[str, int]]:
    """(image, line) of each image a Dockerfile starts or copies from, resolved (unresolvable
    references left out)."""
    return [(image, number) for number, _, image in _references(text, args or {}) if image is not None]


def base_images(text: str, args: Mapping[str, str] | None = None) -> list[str]:
    """The images a Dockerfile starts from or copies from, in order, each once (unresolvable
    references left out)."""
    found = [image for _, _, image in _references(text, args or {}) if image is not None]
    return list(dict.fromkeys(found))


def map_dockerfile(text: str, overrides: Mapping[str, str], args: Mapping[str, str] | None = None) -> Rewritten:
    """``text`` with each image reference replaced by its mapped image (:func:`map_image`)."""
    lines = text.splitlines(keepends=True)
    result = Rewritten(text)
    for number, match, image in _references(text, args or {}):
        if image is None:
            result.unresolved.append((match.group(2), number))
            continue
        mapped = map_image(image, overrides)
        if mapped == image:
            continue
        line = lines[number - 1]
        lines[number - 1] = line[: match.start(2)] + mapped + line[match.end(2) :]
        result.changed.append((image, mapped, number))
    result.text = "".join(lines)
    return result


def copied_sources(text: str, context: Path) -> list[Path]:
    """The files and folders of the build context that ``COPY``/``ADD`` put into the image
    (config files among them); copies from stages or images, URLs and wildcards left out."""
    out: list[Path] = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 3 or words[0].upper() not in ("COPY", "ADD"):
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if any(w.startswith("--from") for w in words[1:]) or len(args) < 2:
            continue
        if args[0].startswith("["):
            try:
                args = [str(a) for a in json.loads(" ".join(args))]
            except ValueError:
                continue
        for source in args[:-1]:
            if "://" in source or any(c in source for c in "*?[$"):
                continue
            out.append(context / source)
    return out


def build_args(build: Mapping[str, Any]) -> dict[str, str]:
    """A ``build:`` section's ``args`` (mapping or ``KEY=VALUE`` list); keys without a value left out."""
    value = build.get("args") or {}
    out: dict[str, str] = {}
    if isinstance(value, Mapping):
        out = {str(k): str(v) for k, v in value.items() if v is not None}
    else:
        for entry in value:
            key, sep, text = str(entry).partition("=")
            if sep:
                out[key] = text
    return out


def dockerfile_of(service: Mapping[str, Any]) -> Path | None:
    """The Dockerfile a ``build:`` service builds from (context + ``dockerfile``), or None for a
    remote context or an inline Dockerfile."""
    build = service.get("build")
    if isinstance(build, str):
        build = {"context": build}
    if not isinstance(build, Mapping) or build.get("dockerfile_inline") is not None:
        return None
    context = str(build.get("context") or ".")
    if "://" in context or context.startswith("git@"):
        return None
    return Path(context) / str(build.get("dockerfile") or "Dockerfile")


def mapped_builds(
    config: Mapping[str, Any], services: Iterable[str], overrides: Mapping[str, str], folder: Path
) -> dict[str, MappedBuild]:
    """Service -> its Dockerfile rewritten into ``folder`` (``<service>.Dockerfile``, with the
    Dockerfile's own ``.dockerignore`` beside it), for the ``build:`` services among ``services``
    whose Dockerfile names an image the mapping changes."""
    all_services = {str(k): dict(v or {}) for k, v in (config.get("services") or {}).items()}
    out: dict[str, MappedBuild] = {}
    if not overrides:
        return out
    for name in services:
        service = all_services.get(name) or {}
        source = dockerfile_of(service)
        if source is None:
            continue
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # the build reports it; unmappable_note says why the mapping did not apply
        rewritten = map_dockerfile(text, overrides, build_args(service.get("build") or {}))
        if not rewritten.changed:
            continue
        target = folder / f"{name}.Dockerfile"
        target.write_text(rewritten.text, encoding="utf-8")
        ignore = source.with_name(source.name + ".dockerignore")
        if ignore.is_file():
            shutil.copyfile(ignore, target.with_name(target.name + ".dockerignore"))
        out[name] = MappedBuild(source, target, tuple(rewritten.changed))
    return out


def unmappable_note(name: str, service: Mapping[str, Any], overrides: Mapping[str, str]) -> str | None:
    """Why the image mapping cannot reach the images ``name``'s Dockerfile starts from, and what to
    do; None when it can (or there is no mapping)."""
    if not overrides or service.get("build") is None:
        return None
    source = dockerfile_of(service)
    if source is None:
        return (
            f"service {name!r} builds from a remote context or an inline Dockerfile, which --netperf-image "
            "cannot rewrite: build its base image locally under the name its FROM line uses"
        )
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"service {name!r}: cannot read {source} to map its FROM images ({exc})"
    unresolved = map_dockerfile(text, overrides, build_args(service.get("build") or {})).unresolved
    if not unresolved:
        return None
    shown = "; ".join(f"line {line}: {written}" for written, line in unresolved)
    return (
        f"service {name!r}: --netperf-image cannot reach the image(s) of {source} named by a build "
        f"argument with no value ({shown}): give the ARG a default before the first FROM, or set it "
        "in the service's build.args, so that the mapping applies"
    )


def missing_base_message(service: str, dockerfile: Path, original: str, mapped: str, line: int) -> str:
    """Why ``service`` cannot be built: an image its Dockerfile starts from is absent, and the fixes."""
    where = f"service {service!r}: {dockerfile} line {line}: FROM {original}"
    if mapped != original:
        fix = f"`docker load` or build {mapped}"
        role = mapped.split("/", 1)[-1].split(":", 1)[0] if mapped.startswith("pytest-netperf/") else ""
        if role:
            fix = f"build it with `netperf images build --only {role}`"
        return f"{where} is mapped to {mapped} (--netperf-image), which is not present locally; {fix}"
    local = local_equivalent(original)
    fixes = [f"`docker load` an archive of {original}", "set NETPERF_PULL=1 where a registry is reachable"]
    if local:
        fixes.insert(
            0, f"map it to the local build: --netperf-image {original}={local} (or the netperf_images ini key)"
        )
    return f"{where} is not present locally and could not be pulled; fixes: " + "; ".join(fixes)
