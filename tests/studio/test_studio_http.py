"""The studio's HTTP side under load and abuse, over real sockets against a real server: a clip sent as a form (as the
page sends it) is streamed to disk and made into a voice, an upload over the cap or cut off leaves nothing behind,
clients that reset or send over-long lines leave no traceback in the log, and an upload in progress is not cut when
a crowd of idle connections arrives from the same address (Home Assistant's ingress proxy is one address)."""
from __future__ import annotations

import asyncio
import base64
import logging
import socket
import time

import aiohttp
import pytest

from studio_helpers import MAX_UPLOAD_MB, Studio, base_model, clip_bytes, listed, start_studio

KIB = 1024


@pytest.fixture(scope="module")
def studio(tmp_path_factory) -> Studio:
    scratch = tmp_path_factory.mktemp("http-studio")
    running = start_studio(base_model(scratch), scratch)
    yield running
    running.service.stop()


def problems(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]


def uploads_left(studio: Studio) -> list[str]:
    clips = studio.voices_file.parent / "clips"
    return sorted(p.name for p in clips.glob(".upload-*")) if clips.exists() else []


async def send_form(studio: Studio, clip: bytes, **fields: str) -> tuple[int, dict]:
    form = aiohttp.FormData()
    for key, value in fields.items():
        form.add_field(key, value)
    form.add_field("clip", clip, filename="clip.flac", content_type="audio/flac")
    async with aiohttp.ClientSession() as session, \
            session.post(studio.url + "api/clone", data=form, headers={"X-Studio-Token": studio.token}) as answer:
        return answer.status, await answer.json()


async def test_a_clip_sent_as_a_form_makes_a_voice_and_leaves_no_upload_behind(studio):
    status, answer = await send_form(studio, clip_bytes(file_format="FLAC"), name="Form", text="Hello there.",
                                     voice_only="false", language="en")
    assert status == 200, answer
    assert "Form" in await listed(studio)
    assert uploads_left(studio) == []
    # Over the cap: refused as it arrives, the part written so far removed.
    status, answer = await send_form(studio, b"\0" * int(MAX_UPLOAD_MB * 2**20 + 1), name="Big")
    assert status == 413 and "studio.max_upload_mb" in answer["error"]
    status, answer = await send_form(studio, clip_bytes(), name="Odd", colour="blue")
    assert status == 400 and "colour" in answer["error"]
    assert uploads_left(studio) == []


def connect(studio: Studio) -> socket.socket:
    host, port = studio.url.split("//")[1].rstrip("/").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def reset(sock: socket.socket) -> None:
    """Closed with a reset (SO_LINGER 0), as a client that goes away mid-exchange."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    sock.close()


def test_clients_that_reset_or_send_over_long_lines_leave_no_traceback(studio, caplog):
    head = (b"POST /api/clone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"X-Studio-Token: %s\r\n" % studio.token.encode())
    attacks = [
        b"GET /" + b"a" * 70 * KIB + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * 70 * KIB + b"\r\n\r\n",
        head + b"Content-Length: 1000000\r\n\r\n" + b"{" + b" " * 200 * KIB,  # a body cut mid-upload
        head + b"Transfer-Encoding: chunked\r\n\r\n10000\r\n" + b" " * 30 * KIB,
    ]
    with caplog.at_level(logging.DEBUG, logger="wyoming_chorus"):
        for _ in range(10):
            for attack in attacks:
                sock = connect(studio)
                try:
                    sock.sendall(attack)
                except ConnectionError:
                    pass
                reset(sock)
        time.sleep(1.0)  # the server sees the resets
    assert problems(caplog) == []
    assert uploads_left(studio) == []


async def test_an_upload_in_progress_is_not_cut_by_a_crowd_of_idle_connections(studio, caplog):
    assert studio.service.service.studio_server is not None
    crowd = 3 * studio.service.service.studio_server.max_connections
    body = b'{"name": "Crowd", "voice_only": true, "clip": "' + base64.b64encode(clip_bytes()) + b'"}'
    upload = connect(studio)
    idle: list[socket.socket] = []
    try:
        upload.sendall(b"POST /api/clone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       b"X-Studio-Token: %s\r\nContent-Length: %d\r\n\r\n" % (studio.token.encode(), len(body))
                       + body[:1000])
        await asyncio.sleep(0.5)  # the request has begun
        for _ in range(crowd):
            sock = connect(studio)
            sock.sendall(b"G")  # begun and never finished: idle
            idle.append(sock)
        await asyncio.sleep(0.5)
        upload.sendall(body[1000:])
        answer = await asyncio.to_thread(upload.recv, 65536)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    finally:
        upload.close()
        for sock in idle:
            sock.close()
    assert "Crowd" in await listed(studio)
    assert problems(caplog) == []
