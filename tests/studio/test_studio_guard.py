"""Who may use the voice studio (wyoming_chorus/studio/guard.py), over real HTTP against a real server: a page that
rebinds its own name to the studio is refused whatever it sends, a change without the page's token is refused, names
the household allows are served, and behind Home Assistant's ingress only the proxy (and the container itself) is
answered, whatever Host it names."""
from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

import pytest

from wyoming_chorus.studio.guard import Forbidden, Guard, hostname

from ingress_proxy import PREFIX, IngressProxy
from studio_helpers import Studio, base_model, call, clip_bytes, clone, start_studio, state
from voice_models import TINY


@pytest.fixture(scope="module")
def studio(tmp_path_factory) -> Studio:
    scratch = tmp_path_factory.mktemp("guarded-studio")
    running = start_studio(base_model(scratch), scratch, allowed_hosts=("studio.home.arpa",))
    yield running
    running.service.stop()


def host_of(studio: Studio, name: str) -> str:
    return f"{name}:{studio.url.rstrip('/').rsplit(':', 1)[1]}"


@pytest.mark.parametrize("path", ["api/default", "api/clone", "api/delete", "api/design"])
def test_a_rebinding_page_is_refused_even_with_the_token(studio, path):
    """What a page at evil.example sends once its name points at the studio: its Host and Origin (it would read the
    token from the page if the page were served to it: it is not, below)."""
    status, _ = clone(studio, "Kept", clip_bytes(), None, voice_only=True)
    assert status in (200, 409)
    before = state(studio)
    evil = host_of(studio, "evil.example")
    status, answer = studio.call(path, {"name": "Kept"}, {"Host": evil, "Origin": f"http://{evil}"})
    assert status == 403 and "evil.example" in answer["error"]
    assert state(studio) == before


@pytest.mark.parametrize("path", ["", "api/voices", "studio.js"])
def test_a_rebinding_page_cannot_read_the_page_or_the_voices(studio, path):
    request = urllib.request.Request(studio.url + path, headers={"Host": host_of(studio, "evil.example")})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403 and studio.token.encode() not in refused.value.read()


def test_a_change_or_a_preview_without_the_pages_token_is_refused(studio):
    before = state(studio)
    for headers in ({}, {"X-Studio-Token": "guessed"}, {"X-Studio-Token": studio.token[:-1]}):
        status, answer = call(studio.url + "api/default", {"name": "ryan"}, headers)
        assert status == 403 and "token" in answer["error"], (headers, answer)
    assert call(studio.url + "api/preview?voice=Kept")[0] == 403
    assert call(studio.url + "api/preview?voice=Kept&token=guessed")[0] == 403
    assert state(studio) == before
    # Served by its address, localhost or a listed name, with the token, it is made.
    for name in ("127.0.0.1", "localhost", "studio.home.arpa", "STUDIO.home.arpa."):
        status, answer = studio.call("api/default", {"name": "Kept"}, {"Host": host_of(studio, name)})
        assert status == 200, (name, answer)


def test_the_page_carries_the_token_that_the_server_made_once(studio, tmp_path):
    with urllib.request.urlopen(studio.url, timeout=30) as answer:
        assert f'<meta name="studio-token" content="{studio.token}">' in answer.read().decode()
    token_file = studio.voices_file.parent / ".studio-token"
    assert token_file.stat().st_mode & 0o077 == 0  # readable by the server's user only
    # A restart keeps it: a page opened before still works.
    running = start_studio(TINY, studio.voices_file.parent.parent)
    try:
        assert running.token == studio.token
    finally:
        running.service.stop()


async def test_behind_ingress_only_the_proxy_is_answered_whatever_host_it_names(tmp_path):
    # The Supervisor's address is 172.30.32.2; here the proxy speaks from another loopback address than the test's.
    running = await asyncio.to_thread(start_studio, base_model(tmp_path), tmp_path, ingress_proxy="127.0.0.2")
    try:
        assert running.service.service.studio_server is not None
        port = running.service.service.studio_server.port
        with IngressProxy(port, source="127.0.0.2", host="homeassistant.local:8123") as proxy:
            with urllib.request.urlopen(proxy.url, timeout=30) as answer:
                assert f'<base href="{PREFIX}/">' in answer.read().decode()
            status, answer = await asyncio.to_thread(
                clone, running, "Ingress", clip_bytes(), None, voice_only=True)
            assert status == 200  # direct from loopback (the container itself): served
            status, answer = await asyncio.to_thread(
                call, proxy.url + "api/default", {"name": "Ingress"},
                {"X-Studio-Token": running.token, "Origin": "http://homeassistant.local:8123"})
            assert status == 200, answer
            status, answer = await asyncio.to_thread(call, proxy.url + "api/default", {"name": "Ingress"})
            assert status == 403  # the token is still needed
    finally:
        await asyncio.to_thread(running.service.stop)


def test_only_the_ingress_proxy_and_loopback_pass_when_there_is_one():
    guard = Guard("t" * 43, frozenset({"localhost"}), "172.30.32.2")
    assert guard.check_peer_and_host("172.30.32.2", "homeassistant.local:8123") is True
    assert guard.check_peer_and_host("::ffff:172.30.32.2", None) is True
    assert guard.check_peer_and_host("127.0.0.1", "127.0.0.1:9701") is False
    for peer in ("172.30.33.5", "192.168.1.20", None):
        with pytest.raises(Forbidden, match="ingress only"):
            guard.check_peer_and_host(peer, "172.30.33.4:9701")
    open_guard = Guard("t" * 43, frozenset({"localhost"}), None)
    assert open_guard.check_peer_and_host("192.168.1.20", "[fe80::1]:9701") is False
    with pytest.raises(Forbidden):
        open_guard.check_peer_and_host("192.168.1.20", "nas.example:9701")


@pytest.mark.parametrize(("header", "name"), [
    ("127.0.0.1:9701", "127.0.0.1"), ("[::1]:9701", "::1"), ("Studio.Example.:80", "studio.example"),
    ("localhost", "localhost"), ("", "")])
def test_hostname_of_a_host_header(header, name):
    assert hostname(header) == name
