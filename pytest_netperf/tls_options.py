"""TLS options of an ``https://`` round (load option ``tls=``) and the driver flags they become."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Optional

_VERSIONS = ("1.2", "1.3")


@dataclass(frozen=True)
class TlsOptions:
    """How the Rust driver speaks TLS to an ``https://`` target.

    ``ca``: PEM bundle of the CAs to trust (default: the system's); ``insecure``: accept any
    server certificate; ``cert``/``key``: client certificate for mutual TLS; ``resumption``:
    resume sessions on reconnect (None: the driver's default, on); ``version``: ``"1.2"`` or
    ``"1.3"`` only (None: both).
    """

    ca: Optional[str] = None
    insecure: bool = False
    cert: Optional[str] = None
    key: Optional[str] = None
    resumption: Optional[bool] = None
    version: Optional[str] = None

    def __post_init__(self) -> None:
        if self.insecure and self.ca:
            raise ValueError("ca and insecure exclude each other")
        if (self.cert is None) != (self.key is None):
            raise ValueError("cert and key go together (mutual TLS)")
        if self.version is not None and self.version not in _VERSIONS:
            raise ValueError(f"version {self.version!r}: expected '1.2' or '1.3'")

    @classmethod
    def of(cls, value: Any) -> TlsOptions:
        """``value`` as TlsOptions: itself, or a mapping of its fields (ValueError otherwise)."""
        if isinstance(value, TlsOptions):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {f.name for f in fields(cls)}
            if unknown:
                raise ValueError(f"unknown TLS option(s) {', '.join(sorted(map(str, unknown)))}")
            paths = ("ca", "cert", "key")
            given: dict[str, Any] = {str(k): str(v) if k in paths and v is not None else v for k, v in value.items()}
            return cls(**given)
        raise ValueError("expected TlsOptions or a mapping such as {'ca': 'ca.pem'}")

    def argv(self) -> list[str]:
        """The ``netperf-driver http`` flags."""
        args: list[str] = []
        if self.ca:
            args += ["--ca", self.ca]
        if self.insecure:
            args.append("--insecure")
        if self.cert and self.key:
            args += ["--cert", self.cert, "--key", self.key]
        if self.resumption is not None:
            args += ["--tls-resumption", "on" if self.resumption else "off"]
        if self.version:
            args += ["--tls-version", self.version]
        return args
