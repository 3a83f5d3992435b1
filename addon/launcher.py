#!/opt/chorus/bin/python3
"""The add-on's entry point (Home Assistant's Supervisor starts it as the container's command): reads the options
the user set (/data/options.json), writes them as a wyoming-chorus configuration, runs the server, and once it
listens announces it to Home Assistant through the Supervisor's discovery API, as the Wyoming add-ons do, so Home
Assistant offers it without zeroconf. Plain Python (the image's own interpreter), no bashio or s6: the server's exit
code is the add-on's, and SIGTERM from the Supervisor reaches the server, which ends its replies and exits 0.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

OPTIONS = Path(os.environ.get("CHORUS_ADDON_OPTIONS", "/data/options.json"))
CONFIG = Path("/tmp/wyoming-chorus.yaml")
WYOMING_PORT = 10200
STUDIO_PORT = 9701  # config.yaml: ingress_port
INGRESS_PROXY = "172.30.32.2"  # the Supervisor's address on the add-on network, where ingress requests come from
# What the Supervisor's discovery API answers within; after a failure, the wait before the next of ATTEMPTS tries.
HTTP_TIMEOUT_S, RETRY_WAIT_S, ATTEMPTS = 10.0, 5.0, 5


def log(message: str) -> None:
    print(f"chorus-addon: {message}", file=sys.stderr, flush=True)


def server_config(options: dict) -> dict:
    """The server's configuration (keys as in config.yaml) from the add-on's options (config.yaml's schema)."""
    return {
        "server": {"uri": f"tcp://0.0.0.0:{WYOMING_PORT}",
                   "log_level": "DEBUG" if options["debug_logging"] else "INFO"},
        # Home Assistant learns the address from the discovery below; mDNS from the add-on network reaches no one.
        "zeroconf": {"enabled": False},
        "engine": {"model": options["model"], "data_dir": "/data", "device": options["device"],
                   "kv_cache_mb": options["kv_cache_mb"]},
        "voices": {"default": options.get("voice") or None, "language": options["language"]},
        # /health for the image's HEALTHCHECK; the port is published only if the user maps it.
        "metrics": {"enabled": True, "address": "0.0.0.0", "port": 9700},
        # The voice studio behind Home Assistant's ingress (config.yaml's ingress_port); its voices stay in
        # /data/studio (engine.data_dir), so they survive updates and are in the add-on's backups.
        # Only Home Assistant's ingress proxy (the Supervisor, INGRESS_PROXY) is answered: the page changes voices, and
        # other containers on the add-on network must not.
        "studio": {"enabled": True, "address": "0.0.0.0", "port": STUDIO_PORT, "ingress_proxy": INGRESS_PROXY},
    }


def wait_until_listening(server: subprocess.Popen) -> bool:
    """True once the Wyoming port accepts connections; False if the server ended first. No deadline: the first
    start downloads and exports the model, which takes minutes."""
    while server.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", WYOMING_PORT), timeout=1.0):
                return True
        except OSError:
            time.sleep(0.5)
    return False


def announce(server: subprocess.Popen) -> None:
    """POST the Wyoming service to the Supervisor's discovery API once the server listens."""
    token = os.environ.get("SUPERVISOR_TOKEN")
    if not token:
        log("no SUPERVISOR_TOKEN (not started by the Supervisor): no discovery; add the Wyoming integration by hand")
        return
    if not wait_until_listening(server):
        return
    url = os.environ.get("SUPERVISOR_API", "http://supervisor").rstrip("/") + "/discovery"
    body = {"service": "wyoming", "config": {"uri": f"tcp://{socket.gethostname()}:{WYOMING_PORT}"}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
                log(f"announced {body['config']['uri']} to Home Assistant (discovery: HTTP {response.status})")
                return
        except OSError as error:  # URLError and HTTPError are OSErrors
            log(f"discovery attempt {attempt}/{ATTEMPTS} failed: {error}")
            time.sleep(RETRY_WAIT_S)
    log("could not announce the server to Home Assistant: add the Wyoming integration by hand (port 10200)")


def main() -> int:
    try:
        options = json.loads(OPTIONS.read_text())
    except (OSError, ValueError) as error:
        log(f"cannot read the add-on options {OPTIONS}: {error}")
        return 2
    # YAML is a superset of JSON: the server reads this file as its --config.
    CONFIG.write_text(json.dumps(server_config(options), indent=2))
    server = subprocess.Popen(["wyoming-chorus", "--config", str(CONFIG)])
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, _frame: server.send_signal(received))
    threading.Thread(target=announce, args=(server,), daemon=True).start()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
