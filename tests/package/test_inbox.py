"""The one inbox type the front end, the engine and the codec threads read (wyoming_chorus/inbox.py): a put after close
is refused, close hands back what was left, and no item put from any thread is lost or seen twice."""
from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from wyoming_chorus.inbox import Inbox


def test_items_come_out_in_order_and_close_hands_back_the_rest():
    inbox: Inbox[int] = Inbox()
    assert all(inbox.put(i) for i in range(5))
    assert inbox.get() == 0
    assert inbox.take_all() == [1, 2, 3, 4]
    assert inbox.get(timeout=0) is None  # nothing queued: none, at once
    assert inbox.put(5) and inbox.put(6)
    assert not inbox.closed
    assert inbox.close() == [5, 6]
    assert inbox.closed


def test_a_put_after_close_is_refused_and_nothing_is_queued():
    inbox: Inbox[str] = Inbox()
    inbox.close()
    assert not inbox.put("late")
    assert inbox.take_all() == [] and inbox.close() == []


def test_a_waiting_owner_is_woken_by_a_put_from_another_thread_and_by_close():
    inbox: Inbox[str] = Inbox()
    got: list[str | None] = []
    first = threading.Event()

    def owner_reads() -> None:
        got.append(inbox.get())
        first.set()
        got.append(inbox.get())  # waits for ever unless close wakes it (or has come already)

    owner = threading.Thread(target=owner_reads)
    owner.start()
    inbox.put("hello")
    assert first.wait(30)
    inbox.close()
    owner.join(30)
    assert not owner.is_alive() and got == ["hello", None]


@settings(max_examples=30, deadline=None)
@given(counts=st.lists(st.integers(0, 200), min_size=1, max_size=4), close_after=st.integers(0, 300))
def test_every_item_is_read_or_handed_back_or_refused_once(counts, close_after):
    """Threads put while the owner reads and, at some point, closes: each item was read by the owner, handed back by
    close(), or refused to its putter; exactly one of the three."""
    inbox: Inbox[tuple[int, int]] = Inbox()
    refused: list[tuple[int, int]] = []
    start = threading.Barrier(len(counts) + 1)

    def putter(who: int, count: int) -> None:
        start.wait()
        refused.extend((who, i) for i in range(count) if not inbox.put((who, i)))

    threads = [threading.Thread(target=putter, args=(who, count)) for who, count in enumerate(counts)]
    for thread in threads:
        thread.start()
    start.wait()
    read: list[tuple[int, int]] = []
    while len(read) < close_after and (item := inbox.get(timeout=0.01 if any(t.is_alive() for t in threads) else 0)):
        read.append(item)
    left = inbox.close()
    for thread in threads:
        thread.join(30)
    everything = read + left + refused
    assert sorted(everything) == sorted((who, i) for who, count in enumerate(counts) for i in range(count))
    for who in range(len(counts)):  # one putter's items reach the owner in the order it put them
        mine = [i for w, i in read + left if w == who]
        assert mine == sorted(mine)
