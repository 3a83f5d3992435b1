import numpy as np
import pytest

from wyoming_chorus.engine.blocks import BlockManager, IntegrityError
from wyoming_chorus.engine.sequence import Sequence

H = 4


def seq(seq_id: int) -> Sequence:
    return Sequence(seq_id, np.zeros((1, H), np.float32), np.zeros((0, H), np.float32), np.zeros(H, np.float32), 1)


def test_blocks_for_rounds_up_with_the_given_block_size():
    assert [BlockManager(8, 32).blocks_for(n) for n in (1, 32, 33, 64, 65)] == [1, 1, 2, 2, 3]
    assert [BlockManager(8, 16).blocks_for(n) for n in (1, 16, 17)] == [1, 1, 2]


def test_allocate_covers_rows_and_grows_the_table():
    blocks = BlockManager(6, 4)
    a = seq(1)
    assert blocks.allocate(a, 5) == [0, 1]
    assert blocks.allocate(a, 8) == []  # already covered
    assert blocks.allocate(a, 9) == [2]
    assert a.block_table == [0, 1, 2]
    assert (blocks.num_free, blocks.num_used) == (3, 3)
    blocks.check_integrity()


def test_allocate_refuses_without_changing_anything():
    blocks = BlockManager(6, 4)
    a, b = seq(1), seq(2)
    assert blocks.allocate(a, 20) == [0, 1, 2, 3, 4]
    assert blocks.allocate(b, 8) is None
    assert b.block_table == []
    assert b.id not in blocks.holders
    assert (blocks.num_free, blocks.num_used) == (1, 5)
    assert blocks.allocate(b, 4) == [5]
    assert blocks.allocate(a, 21) is None
    assert len(a.block_table) == 5
    blocks.check_integrity()


def test_free_returns_every_block_and_is_idempotent():
    blocks = BlockManager(6, 4)
    a, b = seq(1), seq(2)
    blocks.allocate(a, 12)
    blocks.allocate(b, 4)
    blocks.free(a)
    assert a.block_table == []
    assert (blocks.num_free, blocks.num_used) == (5, 1)
    assert list(blocks.holders) == [2]
    blocks.free(a)
    assert blocks.num_free == 5
    assert blocks.allocate(a, 24 - 4) is not None  # the freed blocks are reusable
    blocks.check_integrity()


def test_integrity_detects_a_block_held_twice_with_one_reference():
    blocks = BlockManager(6, 4)
    a, b = seq(1), seq(2)
    blocks.allocate(a, 8)
    blocks.allocate(b, 4)
    b.block_table[0] = a.block_table[0]
    with pytest.raises(IntegrityError, match="reference counts differ"):
        blocks.check_integrity()


def test_integrity_detects_a_leaked_block():
    blocks = BlockManager(6, 4)
    a = seq(1)
    blocks.allocate(a, 8)
    a.block_table.pop()  # used but owned by nobody
    with pytest.raises(IntegrityError, match="differ"):
        blocks.check_integrity()


def test_integrity_detects_a_block_freed_while_still_owned():
    blocks = BlockManager(6, 4)
    a, impostor = seq(1), seq(2)
    blocks.allocate(a, 4)
    impostor.block_table = list(a.block_table)
    blocks.free(impostor)
    with pytest.raises(IntegrityError, match="differ"):
        blocks.check_integrity()


def test_rejects_an_empty_pool():
    with pytest.raises(ValueError):
        BlockManager(0, 32)


# ---- prefix caching -------------------------------------------------------------------------------------------

def prompted(seq_id: int, prompt: np.ndarray) -> Sequence:
    return Sequence(seq_id, prompt, np.zeros((0, H), np.float32), np.zeros(H, np.float32), 4)


def computed(blocks: BlockManager, s: Sequence) -> Sequence:
    """As the scheduler does: admit (reusing what it can), then compute the whole prompt."""
    assert blocks.admit(s, s.num_rows) is not None
    s.num_computed = s.num_rows
    blocks.remember_prefix(s)
    return s


PROMPT = np.arange(11 * H, dtype=np.float32).reshape(11, H)  # 2 full blocks of 4 rows, and 3 more


def test_a_later_request_with_the_same_prompt_start_reuses_its_full_blocks():
    blocks = BlockManager(8, 4)
    a = computed(blocks, prompted(1, PROMPT))
    other = PROMPT.copy()
    other[9:] += 1  # differs only in the last, partial block
    b = prompted(2, other)
    assert blocks.reusable_rows(b) == 8 and b.block_table == [] and blocks.rows_reused == 0  # a look only
    assert blocks.admit(b, b.num_rows) == 8
    assert b.block_table == a.block_table[:2] + [3]  # its own third block
    blocks.check_integrity()
    assert blocks.num_used == 4 and blocks.rows_reused == 8
    differs_early = PROMPT.copy()
    differs_early[5] += 1  # the second block differs: the chain stops after the first
    c = prompted(3, differs_early)
    assert blocks.admit(c, 5) == 4 and c.block_table[:1] == a.block_table[:1]
    blocks.check_integrity()


def test_a_shared_block_returns_to_the_pool_only_when_no_request_holds_it():
    blocks = BlockManager(8, 4)
    a = computed(blocks, prompted(1, PROMPT))
    b = computed(blocks, prompted(2, PROMPT))
    assert blocks.num_used == 4  # 2 shared + one third block each
    blocks.free(a)
    assert blocks.num_used == 3 and blocks.num_cached == 0  # b still holds the shared two
    blocks.free(b)
    assert blocks.num_used == 0 and blocks.num_cached == 2 and blocks.num_free == 8
    blocks.check_integrity()
    c = prompted(3, PROMPT)
    assert blocks.admit(c, 9) == 8 and blocks.num_cached == 0  # taken back out of the cache
    blocks.check_integrity()


def test_cached_blocks_are_evicted_least_recently_freed_first_and_only_when_the_free_list_is_empty():
    blocks = BlockManager(6, 4)
    old, new = PROMPT.copy(), PROMPT.copy() + 100
    blocks.free(computed(blocks, prompted(1, old[:9])))  # 3 blocks, 2 of them cached: freed first
    blocks.free(computed(blocks, prompted(2, new[:9])))  # 2 more cached, freed later
    assert blocks.num_cached == 4 and blocks.num_free == 6
    taker = seq(3)
    assert blocks.allocate(taker, 3 * 4) is not None  # the 2 plain free blocks, then the oldest cached one
    blocks.check_integrity()
    assert blocks.reusable_rows(prompted(4, old[:9])) == 0  # its first block was forgotten: the chain is broken
    assert blocks.admit(prompted(5, new[:9]), 9) == 8
    blocks.check_integrity()


def test_the_last_prompt_row_is_always_computed():
    blocks = BlockManager(8, 4)
    computed(blocks, prompted(1, PROMPT[:8]))  # exactly two blocks
    again = prompted(2, PROMPT[:8])
    assert blocks.reusable_rows(again) == 4  # not 8: the step that computes row 7 emits the first frame


def test_with_prefix_caching_off_nothing_is_reused():
    blocks = BlockManager(8, 4, prefix_caching=False)
    computed(blocks, prompted(1, PROMPT))
    assert blocks.reusable_rows(prompted(2, PROMPT)) == 0 and blocks.num_cached == 0


def test_an_admission_the_pool_cannot_take_changes_and_counts_nothing():
    blocks = BlockManager(4, 4)
    blocks.free(computed(blocks, prompted(1, PROMPT)))  # 2 blocks stay cached
    hog = seq(2)
    blocks.allocate(hog, 8)  # the 2 plain free blocks
    late = prompted(3, PROMPT)
    assert blocks.admit(late, late.num_rows) is None  # its 2 cached blocks and 1 more: the pool has 2
    assert late.block_table == [] and blocks.num_cached == 2 and blocks.rows_reused == 0
    blocks.check_integrity()
    blocks.free(hog)
    assert blocks.admit(late, late.num_rows) == 8 and blocks.rows_reused == 8
    blocks.check_integrity()


def test_integrity_detects_a_wrong_reference_count():
    blocks = BlockManager(8, 4)
    a = computed(blocks, prompted(1, PROMPT))
    computed(blocks, prompted(2, PROMPT))
    a.block_table = a.block_table[1:]  # a lets go of a shared block without telling the manager
    with pytest.raises(IntegrityError, match="reference counts differ"):
        blocks.check_integrity()
