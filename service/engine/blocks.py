"""Which physical KV blocks each request owns. It only counts: the cache tensors live in the native runner.

A request's rows map onto its block table in order; row r lives in block_table[r // block_size] at slot
r % block_size. The block size comes from the compiled model (the runner reads it), never from here.

    free deque: [7][2][5] ...          used set: {0, 1, 3, 4, 6}
    seq "a".block_table = [0, 3, 6]    seq "b".block_table = [1, 4]
"""

from __future__ import annotations

from collections import deque

from .sequence import Sequence


class IntegrityError(RuntimeError):
    """The block accounting is inconsistent: a bug, never a load condition."""


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"need num_blocks >= 1 and block_size >= 1, got {num_blocks} and {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free: deque[int] = deque(range(num_blocks))
        self._used: set[int] = set()
        self.holders: dict[int, Sequence] = {}  # requests that own at least one block, by id

    @property
    def num_free(self) -> int:
        return len(self._free)

    @property
    def num_used(self) -> int:
        return len(self._used)

    def blocks_for(self, num_rows: int) -> int:
        return -(-num_rows // self.block_size)

    def allocate(self, seq: Sequence, num_rows: int) -> list[int] | None:
        """Grow seq's block table to cover num_rows rows (admission and growth alike). Returns the new block ids,
        or None, changing nothing, when the pool is short: the scheduler then decides whom to preempt."""
        missing = self.blocks_for(num_rows) - len(seq.block_table)
        if missing > len(self._free):
            return None
        new = [self._free.popleft() for _ in range(missing)]
        self._used.update(new)
        seq.block_table.extend(new)
        if seq.block_table:
            self.holders[seq.id] = seq
        return new

    def free(self, seq: Sequence) -> None:
        self._used.difference_update(seq.block_table)
        self._free.extend(seq.block_table)
        seq.block_table = []
        self.holders.pop(seq.id, None)

    def check_integrity(self) -> None:
        """Raise IntegrityError unless free + used == total and every used block has exactly one owner."""
        owned = [b for seq in self.holders.values() for b in seq.block_table]
        problems = []
        if len(self._free) + len(self._used) != self.num_blocks:
            problems.append(f"free {len(self._free)} + used {len(self._used)} != total {self.num_blocks}")
        if len(set(self._free)) != len(self._free) or not self._used.isdisjoint(self._free):
            problems.append("a block is on the free list twice or is both free and used")
        if len(set(owned)) != len(owned):
            problems.append("a block is owned twice")
        if set(owned) != self._used:
            problems.append(f"owned blocks differ from used ones: {sorted(set(owned) ^ self._used)}")
        if any(not seq.block_table for seq in self.holders.values()):
            problems.append("a holder owns no block")
        if problems:
            raise IntegrityError("; ".join(problems))
