"""Who may use the studio: the checks every request passes before it is routed.

The studio changes the voices every room speaks with, so two attacks from a web page the household visits matter:
- DNS rebinding: a page at evil.example re-points its own name to the studio's address and then, being "same
  origin" as far as the browser knows, reads the page and posts changes. Its requests name evil.example in Host (and
  Origin). So every request must name, in Host, either an IP address (a browser sends an address only when the page
  itself was loaded from that address, which is the studio's own, never the attacker's), `localhost`, this machine's
  own name, or a name the household listed in studio.allowed_hosts.
- Cross-site requests: a page of another site posts to http://127.0.0.1:9701/... (Host passes: it is an address).
  Writes and previews need the install's token, which the page carries and another site cannot read (the same-origin
  policy), sent in a header (which also makes the browser ask first, a preflight this server never approves); an
  Origin that is not the Host is refused as well.
Behind Home Assistant's ingress (the add-on), the studio.ingress_proxy address is the only peer answered: Home
Assistant has checked who the user is, and no one else on the add-on network reaches the page (loopback, the
container itself, still is). Its requests carry Home Assistant's own Host, so the Host check is the proxy's there.

The token is made once per install (random, in a file beside the studio's voices file, readable by the server's user
only): a page opened before a restart keeps working after it.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import socket
from pathlib import Path
from urllib.parse import urlsplit

TOKEN_HEADER = "x-studio-token"  # header names in lower case: as both HTTP layers look them up
TOKEN_FILE = ".studio-token"


class Forbidden(Exception):
    """A request the studio will not answer, and why (one line, for the client)."""


def install_token(folder: Path) -> str:
    """The install's token, made on first use (folder/TOKEN_FILE, mode 0600)."""
    path = folder / TOKEN_FILE
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text().strip()
        if len(token) >= 32:
            return token
    folder.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    made = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.tmp")
    descriptor = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(token + "\n")
    os.replace(made, path)
    return token


def own_names(configured: tuple[str, ...]) -> frozenset[str]:
    """The host names a request may name besides an address: localhost, this machine's name (and NAME.local, as
    mDNS announces it), and studio.allowed_hosts."""
    machine = socket.gethostname().lower()
    names = {"localhost", machine, machine.split(".")[0] + ".local"}
    return frozenset(names | {name.lower().rstrip(".") for name in configured})


class Guard:
    """The checks, with this install's token and names, and the ingress proxy's address (None: no ingress)."""

    def __init__(self, token: str, names: frozenset[str], ingress_proxy: str | None):
        self.token = token
        self._names = names
        self._proxy = None if ingress_proxy is None else ipaddress.ip_address(ingress_proxy)

    def check_peer_and_host(self, peer: str | None, host: str | None) -> bool:
        """Every request: from the ingress proxy (True), or naming an allowed Host (False); with an ingress proxy,
        only it and this machine itself (loopback: inside the add-on's container) are answered."""
        address = _address(peer or "")
        if self._proxy is not None:
            if address == self._proxy:
                return True
            if address is None or not address.is_loopback:
                raise Forbidden("the studio is served through Home Assistant's ingress only (the add-on's panel)")
        name = hostname(host or "")
        if not name:
            raise Forbidden("the request names no Host")
        if name not in self._names and not _is_address(name):
            raise Forbidden(f"the studio is not served as {name!r}: open it by this machine's address or name, or "
                            "add the name to studio.allowed_hosts")
        return False

    def check_write(self, headers, token: str | None = None, via_proxy: bool = False) -> None:
        """A change (or a preview, which takes the engine's time): the token, and no Origin of another site (behind
        the ingress proxy the Host is Home Assistant's to set: the token alone counts there)."""
        given = token if token is not None else headers.get(TOKEN_HEADER, "")
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            raise Forbidden("this change does not come from the studio's page (no valid token): reload the page")
        origin = headers.get("origin")
        if origin is not None and not via_proxy and urlsplit(origin).netloc.lower() != (headers.get("host") or
                                                                                         "").lower():
            raise Forbidden(f"a change from another site ({origin}) is refused")


def hostname(host: str) -> str:
    """The name or address in a Host header, without its port or brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _address(peer: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The peer's address (None for a Unix socket's)."""
    try:
        address = ipaddress.ip_address(peer.partition("%")[0])
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)  # an IPv4 peer on a dual-stack listener
    return mapped or address
