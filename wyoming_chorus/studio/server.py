"""The studio's page and API, on a listener of its own (studio.address, studio.port), served by metrics_http's
HttpServer on a thread of its own: the studio changes voices, so it listens only where it is meant to be reached
(loopback by default; the add-on's container for Home Assistant's ingress), while /metrics is often open to the LAN.

  GET  /                     the page (page.py); /studio.js and /studio.css beside it
  GET  /api/voices           the model, the voices, the limits and a stale default (JSON; listing.py)
  GET  /api/preview?voice=NAME&language=CODE&token=TOKEN
                             the voice reading the language's preview sentence: WAV, streamed as it is made
  POST /api/clone            a form {name, clip (the file), text, voice_only, language}, or the same as JSON with the
                             clip in base64: a cloned voice (bodies.py)
  POST /api/design           {name, instruct, language}: a designed voice (VoiceDesign models)
  POST /api/default          {name}: the default voice
  POST /api/delete           {name}: a voice the studio made

Who may ask is guard.py's: a Host that names the studio, and for changes and previews the page's token. Changes are
made one at a time, checked against the voices they would make (frontend/voices.Voices.check_studio) and written
whole and atomically, the clip before the entry that names it (voice_file.py): a refused change leaves the voices
file as it was.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from wyoming_chorus.config import CloneVoice, ConfigError, DesignVoice, StudioSettings, VoicesSettings
from wyoming_chorus.errors import QueueFull, ReplyError
from wyoming_chorus.frontend.voices import VoiceInfo, Voices, language_codes
from wyoming_chorus.metrics_http import Answer, HttpRequest, HttpServer, Refused
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.speech.speech_engine import SpeechEngine
from wyoming_chorus.studio.atomic import atomic_write
from wyoming_chorus.studio.bodies import StudioError, clone_fields, json_fields, text_field
from wyoming_chorus.studio.clips import MAX_SECONDS, MAX_TRANSCRIPT, MIN_RATE, MIN_SECONDS, ClipProblem, prepare_clip
from wyoming_chorus.studio.guard import Forbidden, Guard, install_token, own_names
from wyoming_chorus.studio.listing import preview_language, stale_default, voice_entry
from wyoming_chorus.studio.page import HEADERS, Page
from wyoming_chorus.studio.preview import sentence, speak, wav_stream_header
from wyoming_chorus.studio.voice_file import StudioVoiceFile, entry_names, with_clone, with_design, without

_LOG = logging.getLogger(__name__)

UPLOAD_SECONDS = 60.0  # for a clip to arrive whole and be checked and stored
PREVIEW_SECONDS = 120.0  # for a preview (a few seconds of speech) to be made and sent, behind other rooms' replies
JSON_LIMIT = 64 * 1024  # bytes of a change without a clip
MAX_INSTRUCT = 500  # characters of a voice description
_NAME = re.compile(r"[^\W_][\w .'-]{0,39}")  # letters of any script, digits, spaces and a few marks
_JSON = "application/json"


class StudioServer(HttpServer):
    """The studio for `engine` (its `voices` and `model`), whose Handles live on `serving_loop`."""

    # Behind Home Assistant's ingress every user's requests come from one address (the proxy's): a peer may hold as
    # many connections as a browser opens at once, and more close its oldest idle ones (metrics_http). Reading an
    # upload is work the rooms' replies come before: nice 10 has a tenth of nice 0's weight on a contended CPU.
    max_connections, max_per_peer, nice = 32, 16, 10

    def __init__(self, engine: SpeechEngine, voices: Voices, model: ModelDir, serving_loop: asyncio.AbstractEventLoop,
                 listener: socket.socket, settings: StudioSettings, voice_file: StudioVoiceFile):
        super().__init__(listener, "voice studio")
        self._engine, self._voices, self._model, self._serving_loop = engine, voices, model, serving_loop
        self._file = voice_file
        self._guard = Guard(install_token(voice_file.path.parent), own_names(settings.allowed_hosts),
                            settings.ingress_proxy)
        self._max_upload = int(settings.max_upload_mb * 1024 * 1024)
        manifest = model.manifest
        self._can_clone = manifest.model_type == "base" and model.has("speaker_encoder.xml")
        self._in_context = self._can_clone and model.has("codec_encoder.xml")
        self._can_design = manifest.model_type == "voice_design"
        self._clip_rate = int((manifest.speaker_encoder or {}).get("sample_rate", 24000))
        self._page = Page(self._guard.token)
        self._changes: dict[str, Callable[[HttpRequest], Awaitable[dict]]] = {
            "/api/clone": self._clone, "/api/design": self._design, "/api/default": self._default,
            "/api/delete": self._delete}
        self._writing = asyncio.Lock()  # one change at a time (binds to the studio's loop on first use)
        # Before any change: what a server killed halfway through one left (voice_file.py).
        voice_file.sweep_orphans(v.clip.wav for v in voices.current() if v.clip is not None)

    async def _respond(self, request: HttpRequest) -> Answer:
        try:
            request.via_proxy = self._guard.check_peer_and_host(request.peer, request.headers.get("host"))
        except Forbidden as refusal:
            raise _refused("403 Forbidden", str(refusal)) from None
        answer = await self._route(request)
        return dataclasses.replace(answer, headers=answer.headers + HEADERS)

    async def _route(self, request: HttpRequest) -> Answer:
        path = request.path
        try:
            if request.method == "GET":
                if path in ("/", "/index.html"):
                    page = self._page.index(request.headers.get("x-ingress-path", ""))
                    return Answer("200 OK", "text/html; charset=utf-8", page)
                if path.lstrip("/") in self._page.assets:
                    return Answer("200 OK", *self._page.assets[path.lstrip("/")])
                if path == "/api/voices":
                    return _json("200 OK", self._listing())
                if path == "/api/preview":
                    return await self._preview(request)
            elif request.method == "POST" and path in self._changes:
                self._refuse_cross_site(request, path)
                return _json("200 OK", await self._changes[path](request))
        except StudioError as error:
            return _json(error.status, {"error": str(error)})
        if path in self._changes or path in ("/", "/index.html", "/api/voices", "/api/preview"):
            return _json("405 Method Not Allowed", {"error": f"{request.method} is not allowed here"})
        return _json("404 Not Found", {"error": f"nothing at {path}"})

    # ---- reading ---------------------------------------------------------------------------------------------------
    def _listing(self) -> dict:
        voices = self._voices.current()
        studio = self._studio_voices()
        own = entry_names(studio)
        manifest = self._model.manifest
        return {
            "model": {"name": manifest.name, "type": manifest.model_type, "random_weights": manifest.random_weights,
                      "languages": list(language_codes(manifest.languages)), "clone": self._can_clone,
                      "in_context": self._in_context, "design": self._can_design},
            "voices": [voice_entry(v, i == 0, own) for i, v in enumerate(voices)],
            "stale_default": stale_default(self._voices, studio),  # the page offers to fix it
            "limits": {"max_upload_bytes": self._max_upload, "min_seconds": MIN_SECONDS, "max_seconds": MAX_SECONDS,
                       "min_rate": MIN_RATE, "max_transcript": MAX_TRANSCRIPT, "max_instruct": MAX_INSTRUCT},
        }

    async def _preview(self, request: HttpRequest) -> Answer:
        query = parse_qs(request.query)
        try:  # the page's <audio> cannot send a header: the token comes in the query
            self._guard.check_write(request.headers, query.get("token", [""])[0], request.via_proxy)
        except Forbidden as refusal:
            raise StudioError("403 Forbidden", str(refusal)) from None
        voice = self._voice(query.get("voice", [""])[0])
        language = query.get("language", [""])[0]
        code = language if language in voice.languages else preview_language(voice)
        request.allow(PREVIEW_SECONDS)
        pcm = speak(self._engine, self._serving_loop, sentence(code), voice.name, code)
        try:
            first = await anext(pcm, b"")
        except ReplyError as error:  # before any audio: the page is told why, not handed an empty WAV
            raise StudioError("503 Service Unavailable" if isinstance(error, QueueFull) else
                              "422 Unprocessable Content", f"voice {voice.name!r} cannot speak: {error}") from None
        return Answer("200 OK", "audio/wav", _then(wav_stream_header(self._engine.sample_rate) + first, pcm))

    # ---- changes ---------------------------------------------------------------------------------------------------
    async def _clone(self, request: HttpRequest) -> dict:
        if not self._can_clone:
            raise _refused("409 Conflict", f"this model ({self._model.manifest.name}, {self._model.manifest.model_type}"
                                           ") cannot clone voices: cloning needs a Base model (engine.model: "
                                           "0.6b-base or 1.7b-base)")
        request.allow(UPLOAD_SECONDS)
        fields, clip = await clone_fields(request, self._max_upload, self._file.clips)
        try:
            name, language = self._new_name(fields), self._language(fields)
            prepared = await asyncio.to_thread(prepare_clip, clip, text_field(fields, "text"),
                                               fields.get("voice_only") is True, self._clip_rate)
        except ClipProblem as problem:
            raise StudioError("422 Unprocessable Content", str(problem)) from None
        finally:
            if isinstance(clip, Path):
                clip.unlink(missing_ok=True)
        async with self._writing:
            current = self._studio_voices()
            path = self._file.new_clip(name)
            await asyncio.to_thread(atomic_write, path, prepared.wav)
            try:
                self._save(with_clone(current, CloneVoice(name, Path(path.parent.name, path.name), prepared.text,
                                                          language)), name)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
        speaks = ("from the clip and its transcript" if prepared.text and self._in_context
                  else "from the voice in the clip alone")
        return {"name": name, "message": f"voice {name!r} made from {prepared.seconds:.1f} s of the clip; it speaks "
                                         f"{speaks}"}

    async def _design(self, request: HttpRequest) -> dict:
        if not self._can_design:
            raise _refused("409 Conflict", f"this model ({self._model.manifest.name}, {self._model.manifest.model_type}"
                                           ") cannot design voices: that needs a VoiceDesign model (engine.model: "
                                           "1.7b-design)")
        fields = await json_fields(request, JSON_LIMIT)
        name, language = self._new_name(fields), self._language(fields)
        instruct = " ".join((text_field(fields, "instruct") or "").split())
        if not instruct:
            raise StudioError("422 Unprocessable Content", "describe the voice (for example: a calm, deep male voice "
                                                           "with a British accent, speaking slowly)")
        if len(instruct) > MAX_INSTRUCT:
            raise StudioError("422 Unprocessable Content", f"the description has {len(instruct)} characters; at most "
                                                           f"{MAX_INSTRUCT}")
        async with self._writing:
            self._save(with_design(self._studio_voices(), DesignVoice(name, instruct, language)), name)
        return {"name": name, "message": f"voice {name!r} designed"}

    async def _default(self, request: HttpRequest) -> dict:
        name = self._voice(text_field(await json_fields(request, JSON_LIMIT), "name") or "").name
        async with self._writing:
            self._save(dataclasses.replace(self._studio_voices(), default=name), name)
        return {"name": name, "message": f"{name!r} is the default voice"}

    async def _delete(self, request: HttpRequest) -> dict:
        name = self._voice(text_field(await json_fields(request, JSON_LIMIT), "name") or "").name
        async with self._writing:
            current = self._studio_voices()
            if name.casefold() not in entry_names(current):
                raise StudioError("409 Conflict", f"voice {name!r} was not made here (it comes from the model or the "
                                                  "config file): it cannot be deleted here")
            remaining, clone = without(current, name)
            self._save(remaining, None)
            clip = self._file.clip_path(clone) if clone is not None else None
            if clip is not None:  # after the entry: a clip is never missing while an entry names it
                clip.unlink(missing_ok=True)
        return {"name": name, "message": f"voice {name!r} deleted"}

    def _save(self, studio: VoicesSettings, listed: str | None) -> None:
        """Writes `studio` once it is known to make voices the engine will list (with `listed` among them)."""
        try:
            voices = self._voices.check_studio(studio)
        except ConfigError as error:
            if studio.default is None or stale_default(self._voices, studio) is None:
                raise StudioError("422 Unprocessable Content", str(error)) from None
            try:  # a default saved for another model: the engine falls back (frontend/voices.py), the page says so
                voices = self._voices.check_studio(dataclasses.replace(studio, default=None))
            except ConfigError as still:
                raise StudioError("422 Unprocessable Content", str(still)) from None
        if listed is not None and all(v.name != listed for v in voices):
            raise StudioError("422 Unprocessable Content", f"voice {listed!r} would not be listed; see the log")
        self._file.write(studio)

    # ---- checks ------------------------------------------------------------------------------------------------------
    def _studio_voices(self) -> VoicesSettings:
        try:
            return self._file.read()
        except ConfigError as error:  # edited by hand: not overwritten
            raise StudioError("500 Internal Server Error", f"the studio's voices file does not fit ({error}); fix or "
                                                           f"remove {self._file.path}") from None

    def _voice(self, name: str) -> VoiceInfo:
        voice = next((v for v in self._voices.current() if v.name.casefold() == name.casefold()), None)
        if voice is None:
            raise StudioError("404 Not Found", f"there is no voice {name!r}")
        return voice

    def _new_name(self, fields: dict) -> str:
        name = " ".join((text_field(fields, "name") or "").split())
        if not _NAME.fullmatch(name):
            raise StudioError("422 Unprocessable Content", "name the voice: 1 to 40 letters, digits, spaces, dots, "
                                                           "dashes or apostrophes, starting with a letter or digit")
        if any(v.name.casefold() == name.casefold() for v in self._voices.current()):
            raise StudioError("409 Conflict", f"there is a voice named {name!r} already: choose another name")
        return name

    def _language(self, fields: dict) -> str | None:
        code = text_field(fields, "language")
        if code in (None, "auto"):
            return None
        spoken = language_codes(self._model.manifest.languages)
        if code not in spoken:
            raise StudioError("422 Unprocessable Content", f"the model does not speak {code!r}; it speaks "
                                                           f"{', '.join(spoken)}")
        return code

    def _refuse_cross_site(self, request: HttpRequest, path: str) -> None:
        """Changes come from the studio's page (its token, in a header: another site's page can neither read it nor
        send a header without a preflight this server never approves), as JSON (a clone also as a form)."""
        kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind != _JSON and not (path == "/api/clone" and kind == "multipart/form-data"):
            raise _refused("415 Unsupported Media Type", "send changes as JSON (Content-Type: application/json)")
        try:
            self._guard.check_write(request.headers, via_proxy=request.via_proxy)
        except Forbidden as refusal:
            raise _refused("403 Forbidden", str(refusal)) from None


def _refused(status: str, message: str) -> Refused:  # before the body is read (at most 1 MiB more is taken in)
    return Refused(status, json.dumps({"error": message}).encode(), _JSON)


def _json(status: str, data: Any) -> Answer:
    return Answer(status, _JSON, json.dumps(data, ensure_ascii=False).encode())


async def _then(first: bytes, rest: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """`first`, then `rest`; an error of the engine after the first audio ends the audio there (as a Wyoming reply's
    error does), the reason in the log."""
    async with contextlib.aclosing(rest):
        yield first
        try:
            async for piece in rest:
                yield piece
        except ReplyError as error:
            _LOG.warning("a preview ended early: %s", error)
