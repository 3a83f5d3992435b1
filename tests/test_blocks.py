import numpy as np
import pytest

from service.engine.blocks import BlockManager, IntegrityError
from service.engine.sequence import Sequence

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


def test_integrity_detects_a_block_owned_twice():
    blocks = BlockManager(6, 4)
    a, b = seq(1), seq(2)
    blocks.allocate(a, 8)
    blocks.allocate(b, 4)
    b.block_table[0] = a.block_table[0]
    with pytest.raises(IntegrityError, match="owned twice"):
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
