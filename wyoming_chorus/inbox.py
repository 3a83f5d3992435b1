"""The one way into a thread that owns state: the front end, the engine and the codec each read theirs.

Any thread puts; only the owner takes. The shutdown rule is the same for all three: the owner, when it stops, closes
its inbox and answers every message close() hands back (fails its request); a put after that is refused (False), and
the one who put answers it. So every message is read by the owner or answered by someone, once, and nobody waits
for ever for a thread that has gone. One lock guards the queue and the closed flag together: a put can never slip
in behind the owner's last look.
"""
from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Inbox(Generic[T]):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._items: deque[T] = deque()
        self._closed = False

    def put(self, item: T) -> bool:
        """Queues `item` for the owner; False, and nothing queued, once the inbox is closed."""
        with self._lock:
            if self._closed:
                return False
            self._items.append(item)
            self._arrived.notify()
            return True

    def get(self, timeout: float | None = None) -> T | None:
        """The next item, waiting up to `timeout` seconds (None: for ever) for one; None if none came (or the inbox
        is closed and empty)."""
        with self._lock:
            if not self._items and not self._closed:
                self._arrived.wait_for(lambda: self._items or self._closed, timeout)
            return self._items.popleft() if self._items else None

    def take_all(self) -> list[T]:
        """Everything queued now, without waiting."""
        with self._lock:
            return self._drain()

    def close(self) -> list[T]:
        """No more puts; returns what was left, for the caller (the owner) to answer."""
        with self._lock:
            self._closed = True
            self._arrived.notify_all()
            return self._drain()

    def _drain(self) -> list[T]:
        items = list(self._items)
        self._items.clear()
        return items

    @property
    def closed(self) -> bool:
        return self._closed
