"""`present`: a value a test expects to be there, narrowed from ``T | None`` for mypy."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    """``value``, asserted not None (the test fails there, not at an attribute of None)."""
    assert value is not None
    return value
