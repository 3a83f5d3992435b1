"""Which physical KV blocks each request holds. It only counts: the cache tensors live in the native runner.

A request's rows map onto its block table in order; row r lives in block_table[r // block_size] at slot
r % block_size. The block size comes from the compiled model (the runner reads it), never from here.

Prefix caching: a full block of prompt rows is known by the hash of every prompt row up to its end (a chain: block
i's hash covers block i-1's). A request admitted later whose prompt starts with the same rows (a cloned voice's
clip and transcript, a designed voice's instruction) takes those blocks as they are, and its prefill starts after
them. A block is held by as many requests as have it in their table (its reference count); when none holds it, a
block with a known prefix stays cached (least recently freed last) and is handed out again only when no plain
free block is left, forgetting its prefix then.

    free deque: [7][2]      cached (LRU, free): [5][8]      used: {0: 2 refs, 1, 3, 4, 6}
    seq "a".block_table = [0, 3, 6]    seq "b".block_table = [0, 1, 4]    (block 0: the same prompt start)
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque

from .sequence import Sequence


class IntegrityError(RuntimeError):
    """The block accounting is inconsistent: a bug, never a load condition."""


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int, prefix_caching: bool = True):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"need num_blocks >= 1 and block_size >= 1, got {num_blocks} and {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_caching = prefix_caching
        self._free: deque[int] = deque(range(num_blocks))
        self._cached: OrderedDict[int, None] = OrderedDict()  # free, but holding a known prefix: oldest first
        self._refs: dict[int, int] = {}  # used blocks: how many requests hold each
        self._hash_of: dict[int, bytes] = {}  # block -> the prefix hash of its rows
        self._block_of: dict[bytes, int] = {}  # prefix hash -> the block that holds it
        self.holders: dict[int, Sequence] = {}  # requests that hold at least one block, by id
        self.rows_reused = 0  # prompt rows taken from the cache instead of computed, since start

    @property
    def num_free(self) -> int:
        return len(self._free) + len(self._cached)

    @property
    def num_used(self) -> int:
        return len(self._refs)

    @property
    def num_cached(self) -> int:
        """Free blocks that still hold a prompt prefix a later request may reuse."""
        return len(self._cached)

    def blocks_for(self, num_rows: int) -> int:
        return -(-num_rows // self.block_size)

    def allocate(self, seq: Sequence, num_rows: int) -> list[int] | None:
        """Grow seq's block table to cover num_rows rows (admission and growth alike). Returns the new block ids,
        or None, changing nothing, when the pool is short: the scheduler then decides whom to preempt."""
        missing = self.blocks_for(num_rows) - len(seq.block_table)
        if missing <= 0:
            return []  # most decode steps: the last block still has room
        if missing > self.num_free:
            return None
        new = [self._take() for _ in range(missing)]
        for block in new:
            self._refs[block] = 1
        seq.block_table.extend(new)
        if seq.block_table:
            self.holders[seq.id] = seq
        return new

    def reusable_rows(self, seq: Sequence) -> int:
        """Rows of seq's prompt that admit() would take from the cache (a look only: nothing is taken or counted)."""
        return len(self._prefix_hits(seq)) * self.block_size

    def admit(self, seq: Sequence, num_rows: int) -> int | None:
        """For a request that holds nothing: take the cached blocks of its longest known prompt prefix, and new
        blocks after them until its table covers num_rows rows; all or nothing. Returns the rows the prefix holds
        (reusable_rows: they need no computing), or None, changing nothing, when the pool is short. Only an
        admission that happens counts its rows as reused."""
        hits = self._prefix_hits(seq)
        missing = self.blocks_for(num_rows) - len(hits)
        if missing + sum(block in self._cached for block in hits) > self.num_free:
            return None
        for block in hits:
            if block in self._cached:
                del self._cached[block]
            self._refs[block] = self._refs.get(block, 0) + 1
        rows = len(hits) * self.block_size
        seq.block_table = hits
        self.allocate(seq, num_rows)
        self.rows_reused += rows
        return rows

    def _prefix_hits(self, seq: Sequence) -> list[int]:
        """The cached blocks of seq's longest known prompt prefix, always leaving its last row to compute (the step
        that computes it emits the next frame)."""
        if not self.prefix_caching or seq.block_table:
            return []
        hits = []
        for digest in seq.prefix_hashes(self.block_size)[:(seq.num_rows - 1) // self.block_size]:
            if (block := self._block_of.get(digest)) is None:
                break
            hits.append(block)
        return hits

    def remember_prefix(self, seq: Sequence) -> None:
        """After a step: the full blocks of seq's prompt whose rows are all computed become reusable."""
        if not self.prefix_caching:
            return
        hashes = seq.prefix_hashes(self.block_size)
        for i in range(min(len(hashes), seq.num_computed // self.block_size)):
            block, digest = seq.block_table[i], hashes[i]
            if block not in self._hash_of and digest not in self._block_of:
                self._hash_of[block] = digest
                self._block_of[digest] = block

    def free(self, seq: Sequence) -> None:
        """Seq lets go of its blocks; each returns to the pool when no other request holds it."""
        for block in seq.block_table:
            self._refs[block] -= 1
            if self._refs[block] == 0:
                del self._refs[block]
                if block in self._hash_of:
                    self._cached[block] = None  # the most recently freed: evicted last
                else:
                    self._free.append(block)
        seq.block_table = []
        self.holders.pop(seq.id, None)

    def _take(self) -> int:
        if self._free:
            return self._free.popleft()
        block, _ = self._cached.popitem(last=False)  # evict the least recently freed prefix
        del self._block_of[self._hash_of.pop(block)]
        return block

    def check_integrity(self) -> None:
        """Raise IntegrityError unless free + cached + used == total, each used block's reference count is the
        number of holders whose table has it, and the prefix index is one to one over cached and used blocks."""
        held = Counter(b for seq in self.holders.values() for b in seq.block_table)
        free, cached, used = set(self._free), set(self._cached), set(self._refs)
        problems = []
        if len(self._free) + len(self._cached) + len(self._refs) != self.num_blocks:
            problems.append(f"free {len(self._free)} + cached {len(self._cached)} + used {len(self._refs)} "
                            f"!= total {self.num_blocks}")
        if len(free) != len(self._free) or free & cached or free & used or cached & used:
            problems.append("a block is free twice, or both free (or cached) and used")
        if dict(held) != self._refs:
            problems.append(f"reference counts differ from the holders' tables: "
                            f"{sorted(set(held.items()) ^ set(self._refs.items()))}")
        if any(seq.block_table.count(b) > 1 for seq in self.holders.values() for b in set(seq.block_table)):
            problems.append("a request holds a block twice")
        if any(not seq.block_table for seq in self.holders.values()):
            problems.append("a holder holds no block")
        if {self._block_of.get(d) for d in self._hash_of.values()} != set(self._hash_of) \
                or len(self._block_of) != len(self._hash_of) or not cached <= set(self._hash_of) \
                or set(self._hash_of) & free:
            problems.append("the prefix index disagrees with the blocks")
        if problems:
            raise IntegrityError("; ".join(problems))
