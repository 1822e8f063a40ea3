"""Ceilings on what a dump's integers may claim (ids, indices, trace points, inflated
values; docs/format.md section 8), and the checks that apply them: `is_int`, `is_id`.

A dump is input from outside, and valid msgpack may hold any integer up to 2**64 - 1.
Every integer that sizes an allocation, indexes a table or is stored in an int64
column is checked here first, against the dump's own bytes or a ceiling documented in
docs/format.md ("Damage and hostile values"); a record that fails is damage, never
an exception of numpy's or an allocation of the size it claims.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from reader import format as fmt

# Ids (ops, graphs, stacks, frames, files, devices), execution and trace indices and
# steps: int64 columns hold them, and the reader adds counts to them; 2**62 leaves
# room for that arithmetic and is beyond any run (a million traces a second for
# 146,000 years).
MAX_ID = (1 << 62) - 1
# Trace point ids: a `traces` chunk stores them as int32.
MAX_TRACE_POINT = (1 << 31) - 1
# Outputs of one op: TensorFlow's ops have a few (a split into thousands at most).
MAX_OP_OUTPUTS = 1 << 16
# An op's Keras layer path (`layer`) longer than this is not kept.
MAX_LAYER_CHARS = 512
# Trace points are mapped to their ops by a dense table while their ids stay within
# this many of the trace points defined so far (a writer numbers them from 0); an id
# beyond that is kept in a map, so no id sizes the table.
DENSE_SLACK = 1 << 16
# The raw bytes of one tensor value the reader inflates: a compressed FULL_TENSOR
# value (a writer stores a larger one raw, so its bytes are on disk), or a TensorFlow
# tensor stored as its repeated last element.
MAX_INFLATED_VALUE_BYTES = fmt.MAX_COMPRESSED_VALUE_BYTES
# zlib's (deflate's) largest compression ratio is 1032:1; a compressed value claiming
# more raw bytes than this allows for its data cannot be what it says.
ZLIB_MAX_RATIO = 1032
ZLIB_SLACK = 64
# A Zstandard frame's largest ratio: a block holds at most 128 KiB and takes at least
# 4 bytes (an RLE block's header and byte), so 32768:1, plus the frame's header.
ZSTD_MAX_RATIO = 32768
ZSTD_SLACK = 64


def is_int(value: Any) -> TypeGuard[int]:
    """True for an int that is not a bool (msgpack gives both)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_id(value: Any) -> TypeGuard[int]:
    """An int in ``0..MAX_ID``: an id, an index or a step the reader can store."""
    return is_int(value) and 0 <= value <= MAX_ID


def is_opt_ref(value: Any) -> bool:
    """None, or an int an int64 column holds with room to spare (``|value| <= MAX_ID``):
    a reference such as a graph's outer graph, which may be -1 for none."""
    return value is None or (is_int(value) and -MAX_ID <= value <= MAX_ID)


def inflation_problem(raw_bytes: int, stored_bytes: int) -> str | None:
    """Why a compressed value of ``stored_bytes`` cannot hold ``raw_bytes``; None when
    it may."""
    if raw_bytes > MAX_INFLATED_VALUE_BYTES:
        return (
            f"claims {raw_bytes} bytes, more than the {MAX_INFLATED_VALUE_BYTES} a "
            "compressed value may hold"
        )
    if raw_bytes > ZLIB_MAX_RATIO * stored_bytes + ZLIB_SLACK:
        return f"claims {raw_bytes} bytes, more than its {stored_bytes} bytes can inflate to"
    return None
