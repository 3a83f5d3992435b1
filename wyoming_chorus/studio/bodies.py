"""What a change sends, read within bounds: a JSON object of strings and true/false (nothing nested), or, for a
clone, a form (multipart/form-data, as the page sends it) whose clip is streamed into a file as it arrives, never
held whole in memory. (A clone sent as JSON carries its clip in base64, bounded by studio.max_upload_mb.)

An uploaded file is made in the studio's clips folder under a name that marks it as an upload in progress
(UPLOAD_PREFIX); the caller removes it once the clip is made or refused, and what a killed server leaves is swept at
the next start (voice_file.sweep_orphans).
"""
from __future__ import annotations

import base64
import binascii
import json
import secrets
from pathlib import Path

from aiohttp import BodyPartReader

from wyoming_chorus.metrics_http import CHUNK, HttpRequest

UPLOAD_PREFIX = ".upload-"
FIELD_LIMIT = 4096  # bytes of a field other than the clip (a transcript is at most 1,000 characters)
FIELDS = ("name", "text", "voice_only", "language")


class StudioError(Exception):
    """A change or a request that cannot be made, and why, as the page shows it, with its status."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


async def json_fields(request: HttpRequest, limit: int) -> dict:
    """The request's fields: a JSON object of strings, true/false and nulls (nothing nested)."""
    try:
        fields = json.loads(await request.body(limit))
    except RecursionError:  # json's parser stops at the interpreter's depth limit: a body nested thousands deep
        raise StudioError("400 Bad Request", "the request is nested too deep: send a flat JSON object") from None
    except ValueError:
        raise StudioError("400 Bad Request", "the request is not JSON") from None
    if not isinstance(fields, dict):
        raise StudioError("400 Bad Request", "the request is not a JSON object")
    nested = next((key for key, value in fields.items() if not isinstance(value, str | bool | None)), None)
    if nested is not None:
        raise StudioError("400 Bad Request", f"{nested} must be a string, true or false")
    return fields


def text_field(fields: dict, key: str) -> str | None:
    value = fields.get(key)
    if value is not None and not isinstance(value, str):
        raise StudioError("400 Bad Request", f"{key} must be a string")
    return value


async def clone_fields(request: HttpRequest, clip_limit: int, folder: Path) -> tuple[dict, bytes | Path]:
    """A clone's fields and its clip: the file it was streamed into (a form; the caller removes it) or its bytes
    (JSON)."""
    if request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
        fields, path = await read_form(request, clip_limit, folder)
        if path is None:
            raise StudioError("422 Unprocessable Content", "choose a clip (a WAV, FLAC, MP3 or OGG file) or record one")
        return fields, path
    fields = await json_fields(request, clip_limit * 4 // 3 + FIELD_LIMIT * len(FIELDS) + 1024)  # base64: 4/3
    try:
        clip = base64.b64decode(text_field(fields, "clip") or "", validate=True)
    except (binascii.Error, ValueError):
        raise StudioError("400 Bad Request", "the clip is not base64") from None
    if not clip:
        raise StudioError("422 Unprocessable Content", "choose a clip (a WAV, FLAC, MP3 or OGG file) or record one")
    if len(clip) > clip_limit:
        raise StudioError("413 Content Too Large", f"the clip is {len(clip) / 2**20:.1f} MB; at most "
                                                   f"{clip_limit / 2**20:g} MB (studio.max_upload_mb)")
    return fields, clip


async def read_form(request: HttpRequest, clip_limit: int, folder: Path) -> tuple[dict, Path | None]:
    """The form's fields (voice_only as true/false) and the file its clip was written to (None: no clip)."""
    request.refuse_over(clip_limit + len(FIELDS) * FIELD_LIMIT + 4096)  # and the parts' headers
    fields: dict[str, str | bool] = {}
    clip: Path | None = None
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise StudioError("400 Bad Request", "the form holds a form: send a flat one")
            if part.name == "clip" and clip is None:
                folder.mkdir(parents=True, exist_ok=True)
                clip = folder / f"{UPLOAD_PREFIX}{secrets.token_hex(8)}.tmp"
                await _save(request, part, clip, clip_limit)
            elif part.name in FIELDS and part.name not in fields:
                fields[part.name] = await _text(part)
            else:
                raise StudioError("400 Bad Request", f"the form has an unexpected field {part.name!r}")
    except StudioError:
        _remove(clip)
        raise
    except (ValueError, RuntimeError) as error:  # aiohttp's multipart parser: a malformed form
        _remove(clip)
        raise StudioError("400 Bad Request", f"the form cannot be read ({error})") from None
    except BaseException:
        _remove(clip)
        raise
    if "voice_only" in fields:
        fields["voice_only"] = fields["voice_only"] in ("true", "on", "1")
    return fields, clip


async def _save(request: HttpRequest, part: BodyPartReader, path: Path, limit: int) -> None:
    size = 0
    with path.open("wb") as out:
        while piece := await part.read_chunk(CHUNK):
            size += len(piece)
            if size > limit:
                raise StudioError("413 Content Too Large", f"the clip is over {limit / 2**20:g} MB "
                                                           "(studio.max_upload_mb)")
            out.write(piece)
            await request.paced(len(piece))


async def _text(part: BodyPartReader) -> str:
    value = bytearray()
    while piece := await part.read_chunk(CHUNK):
        value += piece
        if len(value) > FIELD_LIMIT:
            raise StudioError("400 Bad Request", f"the field {part.name} is over {FIELD_LIMIT} bytes")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise StudioError("400 Bad Request", f"the field {part.name} is not UTF-8 text") from None


def _remove(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)
