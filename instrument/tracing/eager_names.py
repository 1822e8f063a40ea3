"""The names an eager execution carries (`reader.format.NAMING_OPS`, format 2.8): a
`VarHandleOp`'s variable and a `RestoreV2`'s checkpoint keys, which the diagnosis of a
restored or assigned variable reads to name the variable and its checkpoint key.

Only these ops pay anything: the callback asks `names_of` for an op of
`NAMING_OPS` alone. A restore's keys are its ``tensor_names`` input, a string tensor
in host memory, so reading them costs no device sync.
"""

from __future__ import annotations

from typing import Any

from reader.format import NAMING_OPS

# Characters of one name kept (a checkpoint key is a path of attribute names).
MAX_NAME_CHARS = 1000
# RestoreV2's inputs: prefix, tensor_names, shape_and_slices.
_TENSOR_NAMES = 1


def names_of(op_type: str, inputs: Any, attrs: Any, op_name: str | None) -> list[str] | None:
    """What an eager op of `NAMING_OPS` names; None for any other op, or when the
    names cannot be read (the execution is recorded without them)."""
    if op_type not in NAMING_OPS:
        return None
    if op_type == "RestoreV2":
        return _restore_keys(inputs)
    name = _attr(attrs, "debug_name") or op_name
    if not isinstance(name, (str, bytes)) or not name:
        return None
    if isinstance(name, bytes):
        name = name.decode("utf-8", errors="replace")
    return [name.rstrip("/")[:MAX_NAME_CHARS]]


def _restore_keys(inputs: Any) -> list[str] | None:
    try:
        keys = inputs[_TENSOR_NAMES].numpy().reshape(-1).tolist()
    except (AttributeError, IndexError, TypeError, ValueError):
        return None
    return [
        (k.decode("utf-8", errors="replace") if isinstance(k, bytes) else str(k))[:MAX_NAME_CHARS]
        for k in keys
    ]


def _attr(attrs: Any, key: str) -> Any:
    """An attribute of an eager op's ``attrs`` (names and values, alternating)."""
    if not isinstance(attrs, (tuple, list)):
        return None
    for i in range(0, len(attrs) - 1, 2):
        if attrs[i] == key:
            return attrs[i + 1]
    return None
