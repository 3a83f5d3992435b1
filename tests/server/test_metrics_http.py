"""The metrics HTTP server's limits, over real sockets against the session's real service (tiny model): bad and slow
clients are cut off cleanly, a probe is answered while they try, and the serving loop does none of this work."""
from __future__ import annotations

import logging
import select
import socket
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlparse

import pytest

from wyoming_chorus.cli import main
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.metrics_http import MAX_CONNECTIONS, RENDER_SHARE, REQUEST_DEADLINE, MetricsServer
from wyoming_chorus.wyoming.listeners import bind_listener

from helpers import free_port

KIB = 1024


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def exchange(url: str, request: bytes) -> bytes:
    """Sends `request` whole, then reads the answer until the server closes."""
    parsed = urlparse(url)
    with socket.create_connection((parsed.hostname, parsed.port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def problems(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]


def test_metrics_and_health_answer_and_other_requests_get_their_status(chorus):
    status, body = get(f"{chorus.metrics_url}/metrics")
    assert status == 200 and b"chorus_kv_blocks_total" in body
    assert get(f"{chorus.metrics_url}/health") == (200, b"ok\n")
    assert get(f"{chorus.metrics_url}/nothing")[0] == 404
    assert status_of(exchange(chorus.metrics_url, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) == 405
    assert status_of(exchange(chorus.metrics_url, b"nonsense\r\n\r\n")) == 400


# aiohttp answers a line over its limit with 400 (the line says which); the total is checked here: 431.
@pytest.mark.parametrize(("request_", "status"), [
    (b"GET /health?" + b"a" * 9 * KIB + b" HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9 * KIB + b"\r\n\r\n", 400),
    (b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"a" * 4 * KIB) for i in range(20))
     + b"\r\n", 431),
    (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 70 * KIB + b"\r\n\r\n", 400),
], ids=["request-line-9k", "header-line-9k", "headers-80k-in-total", "header-line-70k"])
def test_an_over_long_request_gets_an_error_status_and_no_traceback(chorus, caplog, request_, status):
    assert status_of(exchange(chorus.metrics_url, request_)) == status
    assert get(f"{chorus.metrics_url}/health")[0] == 200  # served after it: the bad request's handling is over
    assert problems(caplog) == []


def test_a_client_that_sends_two_bytes_a_second_is_closed_at_the_request_deadline(chorus):
    parsed = urlparse(chorus.metrics_url)
    # Short header lines that each arrive in 2.5 s, within a per-line timeout: only a deadline for the whole request
    # ends this.
    trickle = b"X:a\r\n" * 100
    with socket.create_connection((parsed.hostname, parsed.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        closed = False
        for byte in trickle[: int(6 * REQUEST_DEADLINE)]:  # three deadlines' worth of bytes at two a second
            try:
                sock.sendall(bytes([byte]))
                if select.select([sock], [], [], 0.5)[0]:
                    closed = sock.recv(65536) == b""
            except (ConnectionResetError, BrokenPipeError):
                closed = True
            if closed:
                break
    assert closed, "the server still waits for a request that began three deadlines ago"


def test_slow_clients_beyond_the_connection_limit_are_dropped_and_do_not_lock_out_a_probe(chorus):
    parsed = urlparse(chorus.metrics_url)
    slow = [socket.create_connection((parsed.hostname, parsed.port), timeout=10) for _ in range(3 * MAX_CONNECTIONS)]
    try:
        for sock in slow:
            sock.sendall(b"G")  # a request begun and never finished
        assert get(f"{chorus.metrics_url}/health") == (200, b"ok\n")
        # The probe was accepted after all of them, so by its answer the server held at most the limit: the oldest
        # were closed to make room (well before the request deadline would have closed them).
        closed: set[socket.socket] = set()
        give_up = time.monotonic() + REQUEST_DEADLINE / 2
        while len(closed) < len(slow) - MAX_CONNECTIONS and time.monotonic() < give_up:
            for sock in select.select([s for s in slow if s not in closed], [], [], 0.1)[0]:
                try:
                    sock.recv(1)
                except ConnectionResetError:
                    pass
                closed.add(sock)
        assert len(closed) >= len(slow) - MAX_CONNECTIONS
    finally:
        for sock in slow:
            sock.close()


def test_metrics_are_served_while_the_serving_loop_is_blocked(chorus):
    blocked, release = threading.Event(), threading.Event()

    def block() -> None:
        blocked.set()
        release.wait(60)

    chorus._loop.call_soon_threadsafe(block)
    try:
        assert blocked.wait(10)
        assert get(f"{chorus.metrics_url}/health") == (200, b"ok\n")
        assert b"chorus_kv_blocks_total" in get(f"{chorus.metrics_url}/metrics")[1]
    finally:
        release.set()


# ---- the flags: a port taken on one address tells where the metrics listener was bound (no model needed) --------

def _start_up_error(capsys, *flags: str) -> str:
    """Starts the server with a model that does not exist: the one-line error says how far start-up got."""
    code = main(["--uri", f"tcp://127.0.0.1:{free_port()}", "--no-zeroconf", "--model", "/nonexistent/model", *flags])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_metrics_address_says_where_the_metrics_listener_is_bound(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.2", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert "in use" in _start_up_error(capsys, "--metrics-address", "127.0.0.2", "--metrics-port", port)
        # The same port on another address is free: start-up goes on to the (missing) model.
        assert "export" in _start_up_error(capsys, "--metrics-address", "127.0.0.1", "--metrics-port", port)


def test_no_metrics_binds_no_metrics_listener(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert "in use" in _start_up_error(capsys, "--metrics-port", port)
        assert "export" in _start_up_error(capsys, "--metrics-port", port, "--no-metrics")


def test_a_flood_of_scrapes_renders_at_most_render_share_of_the_time():
    """Rendering holds the interpreter lock the engine needs: a flood waits its turn instead of taking that time."""
    render_seconds = 0.02
    starts: list[float] = []

    class SlowMetrics(Metrics):
        def exposition(self) -> bytes:
            starts.append(time.monotonic())
            time.sleep(render_seconds)  # a render that costs this long
            return super().exposition()

    server = MetricsServer(SlowMetrics(), lambda: True, bind_listener("tcp://127.0.0.1:0", "metrics.port", "--x"))
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/metrics"
        scrapes = [threading.Thread(target=get, args=(url,)) for _ in range(5)]
        for scrape in scrapes:
            scrape.start()
        for scrape in scrapes:
            scrape.join()
    finally:
        server.stop()
    assert len(starts) == 5
    assert RENDER_SHARE <= 0.1  # a flood may take at most a tenth of one core from the engine
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    assert min(gaps) >= render_seconds / RENDER_SHARE * 0.95, gaps
