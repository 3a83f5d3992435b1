"""Listening sockets bound before anything slow happens.

Loading and compiling a model takes seconds (13 s at 0.6B on two cores). A port that is already taken should be
reported at once, not after that, and the report should say which of the two listeners (Wyoming or metrics) and
which setting moves it. The sockets are bound and listening here; the servers start accepting on them once the
engine is ready (until then a client's connection waits in the backlog).
"""
from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path
from urllib.parse import urlparse

from wyoming_chorus.errors import SetupError


def bind_listener(uri: str, setting: str, flag: str) -> socket.socket:
    """A listening socket for tcp://HOST:PORT or unix://PATH; SetupError names `setting` and `flag` when the
    address cannot be had."""
    parsed = urlparse(uri)
    try:
        if parsed.scheme == "unix":
            return _bind_unix(Path(parsed.path))
        return _bind_tcp(parsed.hostname or "0.0.0.0", parsed.port or 0)
    except OSError as error:
        raise SetupError(f"{setting} {uri}: {_reason(error)}; choose another with {flag}") from None


def _bind_tcp(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    # As asyncio.start_server does: a restarted server may rebind while old connections are in TIME_WAIT, but never
    # while another server listens there.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return _listen(sock, address)


def _bind_unix(path: Path) -> socket.socket:
    try:
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()  # a socket file left behind by a server that is gone (as wyoming's server does)
    except FileNotFoundError:
        pass
    return _listen(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), str(path))


def _listen(sock: socket.socket, address) -> socket.socket:
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _reason(error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return "the address is already in use (another server is listening there)"
    if error.errno == errno.EADDRNOTAVAIL:
        return "no interface of this host has that address"
    if error.errno == errno.EACCES:
        return "permission denied (ports below 1024 need root)"
    return error.strerror or os.strerror(error.errno or 0) or str(error)
