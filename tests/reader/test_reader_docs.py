"""docs/reader.md against the values it documents: a field added to one of them without
its words in the docs fails here."""

from __future__ import annotations

import dataclasses
import pathlib

from reader.model import Op

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "reader.md"


def _bullet(text: str, start: str) -> str:
    """The list item of ``text`` that starts with ``start``, its continuation lines too."""
    tail = text.split(start, 1)[1]
    return tail.split("\n- ", 1)[0]


def test_every_field_of_an_op_is_named():
    """`.op(op_id) -> Op` names each field of `reader.model.Op` (its id is the argument)."""
    item = _bullet(DOC.read_text(encoding="utf-8"), "- `.op(op_id) -> Op`")
    fields = [f.name for f in dataclasses.fields(Op) if f.name != "id"]
    assert [name for name in fields if f"`{name}`" not in item] == []
