"""TLS termination of a proxy node: plain data the renderers read.

A gateway or balancer node with ``params["tls"]`` (a :class:`TlsTermination`, or a dict of
its fields, or True for the defaults) listens with TLS on ``port`` besides its cleartext main
port, with a server certificate of ``key_type`` (ECDSA P-256, RSA-2048 or RSA-4096) signed by
the session's test CA; the upstream stays cleartext. ``session_cache`` and
``session_tickets`` switch the two ways a server lets clients resume a session; ``mutual``
makes the listener require a client certificate of the same CA (mutual TLS). An Envoy
sidecar with ``params["tls"]`` is the mTLS end of its pod: its peers reach it over mutual TLS
and HTTP/2, presenting their own certificates, as an Istio mesh's sidecars do.

The certificate is minted when the topology comes up (the Docker runtime fills
``certificate``); the renderers then write it into the container next to the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

#: Server key types of a test certificate, as a gate names them.
KEY_TYPES: tuple[str, ...] = ("ecdsa-p256", "rsa-2048", "rsa-4096")
#: The key type when a test names none: what a modern edge serves.
DEFAULT_KEY_TYPE = "ecdsa-p256"
#: Where a TLS-terminating proxy listens when a test names no port.
DEFAULT_TLS_PORT = 8443
#: Where the certificate and key are written in the container.
CERT_DIR = "/netperf/tls"
CERT_PATH = f"{CERT_DIR}/server.pem"
KEY_PATH = f"{CERT_DIR}/server.key"
#: The chain and key in one file, as HAProxy's ``crt`` reads them.
BUNDLE_PATH = f"{CERT_DIR}/server-bundle.pem"
#: The test CA's certificate: what a mutual listener trusts client certificates of (and an
#: Envoy sidecar its peers' server certificates).
CA_PATH = f"{CERT_DIR}/ca.pem"
#: The kinds that can terminate TLS from ``params["tls"]``.
TLS_KINDS: tuple[str, ...] = ("nginx", "haproxy", "envoy")


@dataclass(frozen=True)
class ServerCertificate:
    """A server certificate minted for one node: its chain and key (PEM text), the names it
    carries, the host path of the CA bundle a client must trust to accept it, and that CA's
    certificate (PEM text, written into the container for mutual TLS). It is valid for client
    authentication too: an Envoy sidecar presents it to its peers. ``client_files`` (host
    paths of a client certificate and key of the same CA) is what a driver presents to a
    mutual listener."""

    chain_pem: str
    key_pem: str
    key_type: str
    names: tuple[str, ...]
    ca_file: str
    ca_pem: str = ""
    client_files: tuple[str, str] | None = None

    def __repr__(self) -> str:  # keep key material out of reprs and assertion messages
        return f"ServerCertificate({self.key_type}, names={self.names}, ca_file={self.ca_file!r})"


@dataclass(frozen=True)
class TlsTermination:
    """TLS on a proxy node's listener ``port``: key type and session-resumption switches.

    ``session_cache``: the server keeps sessions by id (nginx ``ssl_session_cache``, HAProxy
    ``tune.ssl.cachesize``); ``session_tickets``: it hands clients tickets to resume with.
    Both off: every reconnect is a full handshake. ``mutual``: a client must present a
    certificate of the session's test CA. ``certificate`` is filled by the runtime.
    """

    key_type: str = DEFAULT_KEY_TYPE
    session_cache: bool = True
    session_tickets: bool = True
    port: int = DEFAULT_TLS_PORT
    mutual: bool = False
    certificate: ServerCertificate | None = None

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError("invalid TLS termination: " + "; ".join(problems))

    def problems(self) -> list[str]:
        """Everything wrong with these values (empty when valid)."""
        problems: list[str] = []
        if self.key_type not in KEY_TYPES:
            problems.append(f"key_type {self.key_type!r} is not one of {', '.join(KEY_TYPES)}")
        for name in ("session_cache", "session_tickets", "mutual"):
            if not isinstance(getattr(self, name), bool):
                problems.append(f"{name} must be True or False, got {getattr(self, name)!r}")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 < self.port < 65536:
            problems.append(f"port must be an integer in 1..65535, got {self.port!r}")
        return problems

    @classmethod
    def of(cls, value: Any) -> TlsTermination:
        """``value`` as a TlsTermination: itself, True (the defaults) or a mapping of its fields."""
        if isinstance(value, TlsTermination):
            return value
        if value is True:
            return cls()
        if isinstance(value, Mapping):
            known = {f.name for f in fields(cls)} - {"certificate"}
            unknown = sorted(str(k) for k in value if k not in known)
            if unknown:
                raise ValueError(f"unknown TLS setting(s) {', '.join(unknown)}; expected {', '.join(sorted(known))}")
            return cls(**{str(k): v for k, v in value.items()})
        expected = "True, a TlsTermination or a dict such as {'key_type': 'rsa-2048'}"
        raise ValueError(f"tls must be {expected}, got {value!r}")

    def with_certificate(self, certificate: ServerCertificate) -> TlsTermination:
        """A copy serving ``certificate``."""
        return replace(self, certificate=certificate)

    def files(self) -> dict[str, str]:
        """The certificate chain and key to write into the container (path -> PEM text): apart
        (nginx, Envoy) and in one bundle (HAProxy), and the CA's certificate."""
        if self.certificate is None:
            raise ValueError("no certificate minted yet (the runtime mints it when the topology comes up)")
        chain, key = self.certificate.chain_pem, self.certificate.key_pem
        files = {CERT_PATH: chain, KEY_PATH: key, BUNDLE_PATH: chain.rstrip("\n") + "\n" + key}
        if self.certificate.ca_pem:
            files[CA_PATH] = self.certificate.ca_pem
        return files

    def describe(self) -> str:
        """``TLS on 8443: ecdsa-p256, session cache on, tickets off`` (``mutual TLS on ...``)."""
        on = {True: "on", False: "off"}
        return (
            f"{'mutual ' if self.mutual else ''}TLS on {self.port}: {self.key_type}, "
            f"session cache {on[self.session_cache]}, tickets {on[self.session_tickets]}"
        )


def tls_of(node_params: Mapping[str, Any]) -> TlsTermination | None:
    """The TLS termination a node's params ask for (None: cleartext only)."""
    value = node_params.get("tls")
    if value is None or value is False:
        return None
    return TlsTermination.of(value)
