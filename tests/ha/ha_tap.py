"""The tap between Home Assistant and the server: forwards every byte unchanged and notes each Wyoming event with
its time and direction."""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field


def now() -> float:
    return time.monotonic()


@dataclass
class WireEvent:
    t: float
    direction: str  # "ha>server" or "server>ha"
    type: str
    data: dict
    payload: int


@dataclass
class TapConnection:
    server_side_port: int  # the port the server sees (its log says "reply to 127.0.0.1:PORT")
    opened: float
    events: list[WireEvent] = field(default_factory=list)

    def sent(self, kind: str) -> list[WireEvent]:
        return [e for e in self.events if e.direction == "ha>server" and e.type == kind]

    def received(self, kind: str) -> list[WireEvent]:
        return [e for e in self.events if e.direction == "server>ha" and e.type == kind]

    @property
    def is_synthesis(self) -> bool:
        return any(e.type in ("synthesize", "synthesize-start") for e in self.events)


class WyomingTap:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.connections: list[TapConnection] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()
        self.listen_port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.listen_port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)
        await self._server.wait_closed()

    def synthesis_connections(self) -> list[TapConnection]:
        return [c for c in self.connections if c.is_synthesis]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(task := asyncio.current_task())
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        self._writers.update((writer, up_writer))
        conn = TapConnection(server_side_port=up_writer.get_extra_info("sockname")[1], opened=now())
        self.connections.append(conn)
        try:
            await asyncio.gather(self._pump(reader, up_writer, conn, "ha>server"),
                                 self._pump(up_reader, writer, conn, "server>ha"))
        finally:
            for w in (writer, up_writer):
                w.close()
                self._writers.discard(w)
            self._tasks.discard(task)

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: TapConnection,
                    direction: str) -> None:
        try:
            while line := await reader.readline():
                header = json.loads(line)
                data_bytes = await reader.readexactly(header.get("data_length") or 0)
                payload = await reader.readexactly(header.get("payload_length") or 0)
                writer.write(line + data_bytes + payload)
                await writer.drain()
                data = dict(header.get("data") or {})
                if data_bytes:
                    data.update(json.loads(data_bytes))
                conn.events.append(WireEvent(now(), direction, header.get("type", "?"), data, len(payload)))
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()  # one side gone: end the other (HA and the server both read None on close)


