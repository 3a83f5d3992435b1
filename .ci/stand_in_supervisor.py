"""A stand-in for Home Assistant's Supervisor in .ci/container: answers `POST /discovery` as the Supervisor does
({"result": "ok", "data": {"uuid": ...}}) and records each request (method, path, Authorization header, JSON body)
as one line of JSON in RECORD, so the check can compare it with what the add-on must send.

    python stand_in_supervisor.py PORT RECORD
"""
from __future__ import annotations

import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer


class Supervisor(BaseHTTPRequestHandler):
    record = ""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = body.decode(errors="replace")
        with open(self.record, "a") as record:
            record.write(json.dumps({"method": "POST", "path": self.path, "authorization":
                                     self.headers.get("Authorization"), "body": parsed}) + "\n")
        reply = json.dumps({"result": "ok", "data": {"uuid": uuid.uuid4().hex}}).encode()
        self.send_response(200 if self.path == "/discovery" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def main() -> None:
    Supervisor.record = sys.argv[2]
    HTTPServer(("127.0.0.1", int(sys.argv[1])), Supervisor).serve_forever()


if __name__ == "__main__":
    main()
