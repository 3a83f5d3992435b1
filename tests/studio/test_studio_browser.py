"""The voice studio in a real browser: headless Chromium (Debian's `chromium` package; .ci/run installs it) driven
through the DevTools protocol, loading the page behind a stand-in for Home Assistant's ingress proxy (a path prefix
that is stripped before the request reaches the server). A clip uploaded through the page's file input makes a voice
that the page lists and a real Wyoming Describe lists; its preview plays to the end; a silent clip gets its message
and changes nothing; a voice designed on a VoiceDesign model is listed; a stale default is fixed from the page. With
STUDIO_SCREENSHOTS=DIR set, the page is saved as PNGs there (README's screenshots: docs/)."""
from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from websockets.asyncio.client import ClientConnection, connect

from helpers import describe
from ingress_proxy import IngressProxy
from studio_helpers import Studio, base_model, clip_bytes, stale_studio_file, start_studio
from voice_models import model_variant

CHROMIUM = shutil.which("chromium")
TIMEOUT = 120.0  # for anything the page waits for; generous, as TIMEOUT in helpers.py (CI shares two cores)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (.ci/run installs it)")


class DevTools:
    """A page of the browser, driven over its DevTools WebSocket. Exceptions the page throws are kept in `thrown`."""

    def __init__(self, socket: ClientConnection):
        self._socket = socket
        self._ids = itertools.count(1)
        self.thrown: list[str] = []

    async def call(self, method: str, **params) -> dict:
        number = next(self._ids)
        await self._socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(await asyncio.wait_for(self._socket.recv(), TIMEOUT))
            if message.get("method") == "Runtime.exceptionThrown":
                self.thrown.append(json.dumps(message["params"]["exceptionDetails"])[:500])
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str):
        """The expression's value once it is truthy."""
        give_up = time.monotonic() + TIMEOUT
        while not (value := await self.evaluate(expression)):
            assert time.monotonic() < give_up, f"still false after {TIMEOUT:g} s: {expression}"
            await asyncio.sleep(0.2)
        return value

    async def open(self, url: str) -> None:
        await self.call("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete' && document.querySelectorAll('#voices tbody tr')"
                            ".length > 0")

    async def upload(self, selector: str, path: Path) -> None:
        root = await self.call("DOM.getDocument")
        node = await self.call("DOM.querySelector", nodeId=root["root"]["nodeId"], selector=selector)
        await self.call("DOM.setFileInputFiles", nodeId=node["nodeId"], files=[str(path)])

    async def fill(self, fields: dict[str, str | bool]) -> None:
        for element_id, value in fields.items():
            prop = "checked" if isinstance(value, bool) else "value"
            await self.evaluate(f"document.getElementById({json.dumps(element_id)}).{prop} = {json.dumps(value)}")

    async def screenshot(self, name: str) -> None:
        folder = os.environ.get("STUDIO_SCREENSHOTS")
        if folder:
            shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            (Path(folder) / name).write_bytes(base64.b64decode(shot["data"]))


@contextlib.asynccontextmanager
async def browser(microphone: Path | None = None) -> AsyncIterator[DevTools]:
    """Headless Chromium on a free DevTools port, one page open, `microphone` (a WAV file, looped) as its microphone;
    stopped (by its process) afterwards."""
    assert CHROMIUM is not None
    profile = Path(tempfile.mkdtemp(prefix="chorus-chromium-"))
    process = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1000,1200",
         "--autoplay-policy=no-user-gesture-required", "--mute-audio",
         # A microphone that needs no permission prompt and hears a file.
         "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
         *([f"--use-file-for-fake-audio-capture={microphone}"] if microphone else []), "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        active = profile / "DevToolsActivePort"  # Chromium writes the port it took here
        give_up = time.monotonic() + TIMEOUT
        while not active.is_file() or len(active.read_text().split()) < 2:
            assert process.poll() is None, f"chromium exited with {process.returncode}"
            assert time.monotonic() < give_up, "chromium did not open its DevTools port"
            await asyncio.sleep(0.1)
        port = active.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            page = next(target for target in json.load(answer) if target["type"] == "page")
        async with connect(page["webSocketDebuggerUrl"], max_size=None) as socket:
            tools = DevTools(socket)
            await tools.call("Runtime.enable")
            await tools.call("Emulation.setDeviceMetricsOverride", width=1000, height=1200, deviceScaleFactor=1,
                             mobile=False)
            yield tools
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def studio(tmp_path_factory) -> Studio:
    scratch = tmp_path_factory.mktemp("browser-studio")
    running = start_studio(base_model(scratch), scratch)
    yield running
    running.service.stop()


PLAYED_SECONDS = "(p => p.played.length ? p.played.end(p.played.length - 1) : 0)(document.getElementById('player'))"


def listed_in_page(name: str) -> str:
    return f"[...document.querySelectorAll('#voices tbody tr')].some(row => row.dataset.voice === {json.dumps(name)})"


async def test_the_page_behind_an_ingress_prefix_clones_previews_and_refuses_a_bad_clip(studio, tmp_path):
    good, silent = tmp_path / "my recording.wav", tmp_path / "silence.flac"
    good.write_bytes(clip_bytes(seconds=5.0, rate=44100, channels=2))
    silent.write_bytes(clip_bytes(seconds=5.0, loudness=0.0, file_format="FLAC"))
    assert studio.service.service.studio_server is not None
    with IngressProxy(studio.service.service.studio_server.port) as proxy:
        async with browser(microphone=good) as page:
            await page.open(proxy.url)
            # Everything the page loaded came through the prefix (relative URLs; nothing from elsewhere).
            loaded = await page.evaluate("[location.href, ...performance.getEntriesByType('resource')"
                                         ".map(entry => entry.name)]")
            assert len(loaded) >= 4 and all(url.startswith(proxy.url) for url in loaded), loaded
            assert await page.evaluate("document.getElementById('clone-section').hidden") is False

            await page.upload("#clone-file", good)
            await page.fill({"clone-name": "Browser Voice", "clone-text": "Hello, this is the voice from the page."})
            await page.evaluate("document.querySelector('#clone-form button[type=submit]').click()")
            await page.wait_for(listed_in_page("Browser Voice"))
            assert "Browser Voice" in await page.evaluate("document.getElementById('message').textContent")
            assert "Browser Voice" in [v.name for v in (await describe(studio.port)).tts[0].voices]
            # The page previews a voice it made: the audio element plays the server's streamed WAV to its end.
            state = await page.wait_for("['ended', 'error'].includes(document.getElementById('player').dataset"
                                        ".state) && document.getElementById('player').dataset.state")
            assert state == "ended"
            assert await page.evaluate(PLAYED_SECONDS) > 0
            await page.screenshot("studio.png")

            before = studio.voices_file.read_bytes()
            await page.evaluate("document.getElementById('clone-form').reset()")
            await page.upload("#clone-file", silent)
            await page.fill({"clone-name": "Silent", "clone-voice-only": True})
            await page.evaluate("document.querySelector('#clone-form button[type=submit]').click()")
            message = await page.wait_for("document.getElementById('message').className === 'problem' && "
                                          "document.getElementById('message').textContent")
            assert "silent" in message
            assert studio.voices_file.read_bytes() == before
            assert await page.evaluate(listed_in_page("Silent")) is False
            await page.screenshot("studio-refused.png")

            # Recorded in the page (MediaRecorder; decoded by the browser and sent as WAV) from a microphone that
            # hears the clip.
            await page.evaluate("document.getElementById('clone-form').reset()")
            await page.evaluate("document.getElementById('record').click()")
            await page.wait_for("document.getElementById('record').textContent === 'Stop'")
            await asyncio.sleep(4.5)
            await page.evaluate("document.getElementById('record').click()")
            await page.wait_for("document.getElementById('record-state').textContent.startsWith('Recorded')")
            await page.fill({"clone-name": "Recorded", "clone-voice-only": True})
            await page.evaluate("document.querySelector('#clone-form button[type=submit]').click()")
            message = await page.wait_for("(m => (m.className === 'problem' || m.textContent.includes('Recorded')) "
                                          "&& m.textContent)(document.getElementById('message'))")
            assert await page.evaluate("document.getElementById('message').className") == "ok", message
            await page.wait_for(listed_in_page("Recorded"))

            # The default voice, picked in the page (its radio button): the voice spoken when Home Assistant names
            # none, and the first its next Describe offers. Until now the first voice made is the default.
            assert (await describe(studio.port)).tts[0].voices[0].name == "Browser Voice"
            await page.evaluate("document.querySelector('input[name=default][title=\"Make Recorded the default "
                                "voice\"]').click()")
            async with asyncio.timeout(60):
                while (await describe(studio.port)).tts[0].voices[0].name != "Recorded":
                    await asyncio.sleep(0.2)
            assert studio.service.service.engine.voices[0].name == "Recorded"
            assert await page.evaluate("document.querySelector('input[name=default]:checked').title") == \
                "Make Recorded the default voice"
            assert page.thrown == []


async def test_a_voice_is_designed_from_the_page_on_a_voice_design_model(tmp_path):
    running = await asyncio.to_thread(start_studio, model_variant(tmp_path, "voice_design"), tmp_path)
    try:
        assert running.service.service.studio_server is not None
        with IngressProxy(running.service.service.studio_server.port) as proxy:
            async with browser() as page:
                await page.open(proxy.url)
                assert await page.evaluate("document.getElementById('clone-section').hidden") is True
                await page.fill({"design-instruct": "A warm, slow voice, like a storyteller by the fire.",
                                 "design-name": "Storyteller", "design-language": "en"})
                await page.evaluate("document.querySelector('#design-form button[type=submit]').click()")
                await page.wait_for(listed_in_page("Storyteller"))
                state = await page.wait_for("['ended', 'error'].includes(document.getElementById('player').dataset"
                                            ".state) && document.getElementById('player').dataset.state")
                assert state == "ended" and await page.evaluate(PLAYED_SECONDS) > 0
                assert "Storyteller" in [v.name for v in (await describe(running.port)).tts[0].voices]
                await page.screenshot("studio-design.png")
                assert page.thrown == []
    finally:
        await asyncio.to_thread(running.service.stop)


async def test_a_stale_default_is_fixed_from_the_page(tmp_path):
    """The model was switched, and the studio's saved default names a voice the new one lacks: the page says so and
    its button makes the first voice the default."""
    stale_studio_file(tmp_path / "studio" / "voices.yaml")
    running = await asyncio.to_thread(start_studio, base_model(tmp_path), tmp_path)
    try:
        assert running.service.service.studio_server is not None
        with IngressProxy(running.service.service.studio_server.port) as proxy:
            async with browser() as page:
                await page.open(proxy.url)
                notice = await page.wait_for("!document.getElementById('stale-default').hidden && "
                                             "document.getElementById('stale-default').textContent")
                assert "ryan" in notice and "Kept" in notice
                await page.screenshot("studio-stale-default.png")
                await page.evaluate("document.getElementById('stale-fix').click()")
                await page.wait_for("document.getElementById('stale-default').hidden")
                assert "Kept" in await page.evaluate("document.getElementById('message').textContent")
                assert yaml.safe_load(running.voices_file.read_text())["voices"]["default"] == "Kept"
                assert (await describe(running.port)).tts[0].voices[0].name == "Kept"
                assert page.thrown == []
    finally:
        await asyncio.to_thread(running.service.stop)
