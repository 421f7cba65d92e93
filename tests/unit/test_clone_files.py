"""What a counting clone gets of its node's files (runtime/counting_clone.py ``under_folder``):
``get_archive`` gives a path's entries relative to its folder; put back at ``/`` under that
folder, they land where they came from even where the clone's image has no such folder (a
rendered TLS node's ``/netperf/tls``, written into its container: the clone of the plugin's
nginx TLS gateway did not start, "Could not find the file /netperf/tls in container")."""

from __future__ import annotations

import io
import tarfile

from pytest_netperf.runtime.counting_clone import under_folder


def _tar(entries: list[tuple[str, bytes | None]], link: tuple[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(link[0])
            info.type, info.linkname = tarfile.LNKTYPE, link[1]
            tar.addfile(info)
    return out.getvalue()


def _read(archive: bytes) -> dict[str, tuple[str, bytes | None]]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        found = {}
        for m in tar.getmembers():
            handle = tar.extractfile(m) if m.isfile() else None
            kind = "link:" + m.linkname if m.islnk() else ("dir" if m.isdir() else "file")
            found[m.name] = (kind, handle.read() if handle else None)
        return found


def test_a_file_moves_under_its_folder() -> None:
    moved = _read(under_folder(_tar([("server.pem", b"PEM")]), "netperf/tls"))
    assert moved == {"netperf/tls/server.pem": ("file", b"PEM")}


def test_a_folder_keeps_its_tree_and_hard_links_follow() -> None:
    archive = _tar([("tls", None), ("tls/server.key", b"KEY")], link=("tls/copy.key", "tls/server.key"))
    moved = _read(under_folder(archive, "netperf"))
    assert moved == {
        "netperf/tls": ("dir", None),
        "netperf/tls/server.key": ("file", b"KEY"),
        "netperf/tls/copy.key": ("link:netperf/tls/server.key", None),
    }


def test_a_path_at_the_root_is_left_as_it_is() -> None:
    archive = _tar([("config.yaml", b"x: 1")])
    assert under_folder(archive, "") == archive
