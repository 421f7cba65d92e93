"""What ``netperf init`` needs to speak TLS to a proxy that listens with TLS only: the CA that
signed its certificate (to trust) and the names its certificate carries (to send as SNI and Host).

Both are read from the PEM files the service bind-mounts (``./certs:/etc/nginx/certs``): a
certificate marked as a CA (basic constraints ``CA:TRUE``) is the CA to trust, preferring a
self-signed one (a root); the DNS names of the other certificates are the server's names. Keys
and files that are not certificates are skipped; nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cryptography import x509

from pytest_netperf.starter.routes import MAX_FILE_BYTES, MAX_FILES

#: Endings of certificate files.
CERT_SUFFIXES = (".pem", ".crt", ".cer", ".cert")


@dataclass(frozen=True)
class TlsTrust:
    """What a service's mounted certificates say: the CA to trust and the server's names."""

    #: a CA certificate among the mounted files (None: none found)
    ca: Optional[Path] = None
    #: DNS names of the server certificates found, in file order
    names: tuple[str, ...] = ()


def certificate_files(sources: Iterable[Path]) -> list[Path]:
    """The certificate files among ``sources`` (files, and folders searched two levels deep)."""
    found: list[Path] = []
    for source in sources:
        if source.is_file() and source.name.lower().endswith(CERT_SUFFIXES):
            found.append(source)
        elif source.is_dir():
            for pattern in ("*", "*/*"):
                found.extend(
                    sorted(p for p in source.glob(pattern) if p.is_file() and p.name.lower().endswith(CERT_SUFFIXES))
                )
    unique = list(dict.fromkeys(found))
    return [p for p in unique if p.stat().st_size <= MAX_FILE_BYTES][:MAX_FILES]


def read_certificates(path: Path) -> list[x509.Certificate]:
    """The PEM certificates in ``path``; none when it holds none or cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if b"-----BEGIN CERTIFICATE-----" not in data:
        return []
    try:
        return list(x509.load_pem_x509_certificates(data))
    except ValueError:
        return []


def is_ca(certificate: x509.Certificate) -> bool:
    """Whether ``certificate`` may sign others (basic constraints ``CA:TRUE``)."""
    try:
        return bool(certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def dns_names(certificate: x509.Certificate) -> list[str]:
    """The DNS names of ``certificate``'s subject alternative names (wildcards left out)."""
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [name for name in names.get_values_for_type(x509.DNSName) if "*" not in name]


def find_trust(sources: Iterable[Path]) -> TlsTrust:
    """The CA and server names of the certificates among ``sources`` (a service's bind mounts)."""
    roots: list[Path] = []
    intermediates: list[Path] = []
    names: list[str] = []
    for path in certificate_files(sources):
        certificates = read_certificates(path)
        if certificates and all(is_ca(c) for c in certificates):
            (roots if any(c.subject == c.issuer for c in certificates) else intermediates).append(path)
        elif certificates:
            names += dns_names(certificates[0])  # a chain file: its first certificate is the server's
    candidates = roots or intermediates
    return TlsTrust(candidates[0] if candidates else None, tuple(dict.fromkeys(names)))


def check_ca_file(path: Path) -> Optional[str]:
    """Why ``path`` cannot be the CA bundle the gates trust, or None when it can."""
    if not path.is_file():
        return f"--tls-ca {path}: no such file"
    if not read_certificates(path):
        return f"--tls-ca {path}: not a PEM certificate (-----BEGIN CERTIFICATE-----)"
    return None
