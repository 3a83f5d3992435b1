"""A stand-in for Home Assistant's ingress proxy: serves an upstream under /api/hassio_ingress/TOKEN/, stripping that
prefix, passing every header on as the Supervisor does (Host and Origin included) and adding X-Ingress-Path; the
answer is passed back as it comes (streamed)."""
from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "Xk3cT0ken"
PREFIX = f"/api/hassio_ingress/{TOKEN}"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "upgrade"}


class IngressProxy:
    """Started and stopped as a context manager; `url` is the ingress panel's URL (with its trailing slash)."""

    def __init__(self, upstream_port: int, source: str = "127.0.0.1", host: str | None = None):
        """Forwards to 127.0.0.1:`upstream_port` from the address `source` (Home Assistant's Supervisor is
        172.30.32.2 on the add-on network); `host`, when given, is the Host passed on (Home Assistant's own, as its
        frontend is opened), else the browser's."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                proxy.forward(self)

            do_POST = do_GET

            def log_message(self, *args) -> None:
                pass

        self.upstream_port = upstream_port
        self.source = source
        self.host = host
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}{PREFIX}/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        if not handler.path.startswith(PREFIX + "/"):
            handler.send_error(404)
            return
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        headers = {name: value for name, value in handler.headers.items() if name.lower() not in _HOP_BY_HOP}
        headers["X-Ingress-Path"] = PREFIX
        if self.host is not None:
            headers = {name: value for name, value in headers.items() if name.lower() != "host"}
            headers["Host"] = self.host
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120,
                                              source_address=(self.source, 0))
        try:
            upstream.request(handler.command, handler.path[len(PREFIX):], body=body or None, headers=headers)
            answer = upstream.getresponse()
            handler.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in _HOP_BY_HOP:
                    handler.send_header(name, value)
            handler.send_header("Connection", "close")
            handler.end_headers()
            while piece := answer.read1(65536):
                handler.wfile.write(piece)
                handler.wfile.flush()
        finally:
            upstream.close()

    def __enter__(self) -> IngressProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
