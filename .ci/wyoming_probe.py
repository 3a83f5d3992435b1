"""What .ci/container and .ci/haproxy ask a running server, as Home Assistant asks it: the real `wyoming` client
(Describe) and the tools' client (`chorus_tools.client.speak`, one connection per reply). Prints one line per check
and exits 1 on the first that fails. Runs wherever `wyoming` is installed and tools/ is on the path (inside the
image: the checkout's tools/ mounted read-only and put on PYTHONPATH).

    python wyoming_probe.py describe tcp://HOST:PORT
    python wyoming_probe.py speak tcp://HOST:PORT [--rooms N]
"""
from __future__ import annotations

import argparse
import asyncio
import sys

from wyoming.client import AsyncClient
from wyoming.info import Describe, Info

from chorus_tools.client import speak

TIMEOUT_S = 120.0


async def describe(uri: str) -> str | None:
    """None when the server answers Describe with an installed TTS program and voice; otherwise what is wrong."""
    async with asyncio.timeout(TIMEOUT_S), AsyncClient.from_uri(uri) as client:
        await client.write_event(Describe().event())
        while (event := await client.read_event()) is not None:
            if Info.is_type(event.type):
                info = Info.from_event(event)
                voices = [voice.name for program in info.tts if program.installed for voice in program.voices
                          if voice.installed]
                print(f"describe: {info.tts[0].name if info.tts else '-'}, {len(voices)} voices, e.g. {voices[:3]}")
                return None if voices else "no installed TTS voice in Info"
    return "the connection closed before Info"


async def rooms(uri: str, count: int) -> str | None:
    """None when `count` one-shot replies at once, each on its own connection, all end with audio-stop and audio."""
    texts = [f"Good morning, room {room}. The kitchen light is on." for room in range(count)]
    replies = await asyncio.gather(*(speak(uri, text, timeout=TIMEOUT_S) for text in texts))
    for room, reply in enumerate(replies):
        print(f"speak: room {room}: {reply.audio_s:.2f} s of audio, complete={reply.complete}, error={reply.error}")
    bad = [room for room, reply in enumerate(replies) if not (reply.complete and reply.audio_s > 0 and not reply.error)]
    return f"rooms {bad} got no complete audio" if bad else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=["describe", "speak"])
    parser.add_argument("uri")
    parser.add_argument("--rooms", type=int, default=1, help="replies at once (speak)")
    args = parser.parse_args()
    problem = asyncio.run(describe(args.uri) if args.check == "describe" else rooms(args.uri, args.rooms))
    if problem:
        print(f"{args.check}: FAILED: {problem}", file=sys.stderr)
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main())
