"""The page itself (static/: plain HTML, CSS and JavaScript, nothing loaded from elsewhere), as the studio serves it:
index.html with the install's token (which the page sends back with its changes: studio/guard.py) and, behind Home
Assistant's ingress, a <base> at the ingress path (it says which in X-Ingress-Path; every URL the page uses is
relative), and the headers every answer carries."""
from __future__ import annotations

import html
import re
from importlib.resources import files

ASSETS = {"studio.js": "text/javascript; charset=utf-8", "studio.css": "text/css; charset=utf-8"}
# The page loads only what this server serves; Home Assistant shows it in a frame of its own origin.
HEADERS = (("Content-Security-Policy", "default-src 'self'; media-src 'self' blob:; img-src 'self' data:; "
                                       "object-src 'none'; base-uri 'self'; frame-ancestors 'self'"),
           ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"))
_INGRESS_PATH = re.compile(r"/[A-Za-z0-9._~/-]*")


class Page:
    def __init__(self, token: str):
        static = files(__package__).joinpath("static")
        self._index = static.joinpath("index.html").read_bytes().replace(
            b"<!-- token -->", f'<meta name="studio-token" content="{html.escape(token)}">'.encode())
        self.assets = {name: (kind, static.joinpath(name).read_bytes()) for name, kind in ASSETS.items()}

    def index(self, ingress_path: str) -> bytes:
        """index.html, with a <base> at Home Assistant's ingress path when it says one."""
        if not _INGRESS_PATH.fullmatch(ingress_path):
            return self._index
        base = f'<base href="{html.escape(ingress_path.rstrip("/") + "/")}">'
        return self._index.replace(b"<!-- base -->", base.encode())
