"""Serving past loopback: who may connect, and TLS so bearer tokens never cross a network in clear.

:func:`check_bind_host` is the rule ``roundtable serve`` applies before it binds anything: a
loopback address is always allowed; any other needs ``--allow-remote`` **and** either TLS served
here (:func:`load_server_tls`, uvicorn's own TLS over a context loaded before the bind) or the
operator's word that a proxy in front terminates TLS (``--behind-tls-proxy``). Plain HTTP past
loopback would send every bearer token in clear, so it is never the default.

:func:`load_server_tls` reads the certificate chain and key once, before the bind, and turns every
way they can be wrong (missing, unreadable, not PEM, an encrypted key, a key that is not the
certificate's) into an ``invalid_argument`` that names the file; nothing is started.
:func:`assume_https` is the app wrapper for the proxy case: requests are marked ``https`` so the
URLs the service derives from a request (the protected-resource metadata) are the ones clients use.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.errors import InvalidArgument

__all__ = ["ServerTLS", "assume_https", "check_bind_host", "load_server_tls"]

_FIX = (
    "pass --tls-cert FILE --tls-key FILE to serve TLS, or --behind-tls-proxy when a proxy in front "
    "terminates TLS"
)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind_host(
    host: str, *, allow_remote: bool, tls: bool = False, behind_tls_proxy: bool = False
) -> None:
    """Refuse a non-loopback bind unless allowed, and refuse it over plain HTTP unless a proxy does TLS.

    ``tls`` says TLS is served here; ``behind_tls_proxy`` that a proxy in front terminates it. The
    refusal is an ``invalid_argument`` naming the flags that fix it, raised before anything binds.
    """
    if tls and behind_tls_proxy:
        raise InvalidArgument(
            "give either --tls-cert/--tls-key (TLS served here) or --behind-tls-proxy (TLS served by "
            "a proxy in front), not both"
        )
    if _is_loopback(host):
        return
    if not allow_remote:
        raise InvalidArgument(
            f"refusing to listen on {host!r}, which is not a loopback address; "
            "pass --allow-remote to serve other machines"
        )
    if not (tls or behind_tls_proxy):
        raise InvalidArgument(
            f"refusing to serve {host!r} over plain HTTP: bearer tokens would cross the network in "
            f"clear; {_FIX}"
        )


@dataclass(frozen=True)
class ServerTLS:
    """A server-side TLS context loaded from ``cert`` (PEM chain, leaf first) and ``key`` (PEM)."""

    cert: Path
    key: Path
    context: ssl.SSLContext


class _EncryptedKeyError(Exception):
    """Raised from the password callback: a key that needs a passphrase (none is asked for)."""


def _no_passphrase() -> str:
    # Without a callback OpenSSL would prompt on the terminal; a server must not wait for one.
    raise _EncryptedKeyError


def load_server_tls(cert: str | Path, key: str | Path) -> ServerTLS:
    """The TLS context of a server with this certificate chain and key, or a clear ``invalid_argument``.

    TLS 1.2 at least. Called before binding, so a bad file means nothing was started.
    """
    cert_path, key_path = Path(cert), Path(key)
    for label, path in (("certificate", cert_path), ("key", key_path)):
        try:
            with path.open("rb") as handle:
                handle.read(1)
        except OSError as exc:
            raise InvalidArgument(f"cannot read the TLS {label} {str(path)!r}: {exc.strerror}") from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_path, key_path, password=_no_passphrase)
    except _EncryptedKeyError:
        raise InvalidArgument(
            f"the TLS key {str(key_path)!r} is encrypted; give an unencrypted key (mode 0600)"
        ) from None
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            detail = f"the key {str(key_path)!r} is not the key of the certificate {str(cert_path)!r}"
        else:
            detail = (
                f"{str(cert_path)!r} and {str(key_path)!r} are not a PEM certificate chain and "
                f"its PEM key ({exc.reason or exc})"
            )
        raise InvalidArgument(f"cannot use the TLS certificate and key: {detail}") from None
    return ServerTLS(cert=cert_path, key=key_path, context=context)


class _AssumeHTTPS:
    """An ASGI wrapper that marks every HTTP request ``https`` (a proxy in front terminated TLS)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("scheme") == "http":
            scope = {**scope, "scheme": "https"}
        await self.app(scope, receive, send)


def assume_https(app: Any) -> Any:
    """``app`` behind a TLS-terminating proxy: requests say ``https``, so derived URLs do too.

    Lifespan and other scope types pass through untouched.
    """
    return _AssumeHTTPS(app)
