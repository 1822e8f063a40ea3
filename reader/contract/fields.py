"""How a record kind is declared: `RecordKind`, `FieldTable`, `field` and `Field` (a
key, its type, the version it came in, a bin column's dtype).

A record kind is a class (`RecordKind`) whose attributes are its keys, declared with
`field`::

    class OpRecord(RecordKind):
        '''An op created while a graph was built.'''

        KIND = "op"
        GRAPH: Final = field("graph", int, "graph id")
        VARIABLE: Final = field("var", str, "the variable it reads or writes", since=(2, 4))

After the class statement ``OpRecord.GRAPH`` is the plain string ``"graph"`` (what the
writer and the reader index records with) and ``OpRecord.FIELDS`` the table of its
fields (`Field`), in declaration order, which the tests hold against docs/format.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar, Final

# (major, minor), as in docs/format.md section 2.
Version = tuple[int, int]

# The key every record carries: its kind (`RecordKind.KIND`).
KIND_KEY: Final = "k"


@dataclass(frozen=True)
class Field:
    """One key of a record kind.

    Attributes:
        key: The map key, as written.
        type: What msgpack decodes its value to: int, float, str, bool, bytes (msgpack's
            bin), list or dict.
        meaning: A few words; docs/format.md says it in full.
        since: The format version that added it to its kind; None: as old as the kind.
        nullable: Whether nil is one of its values.
        column: For a bin column of a chunk, the little-endian numpy dtype of each
            entry (``"<i4"``); None otherwise.
        written: False for a key only the TF-events loader puts in the records it
            makes of TensorFlow's dumps: not part of the format on disk.
    """

    key: str
    type: type
    meaning: str
    since: Version | None = None
    nullable: bool = False
    column: str | None = None
    written: bool = True


class _DeclaredKey(str):
    """A key while its class is being made: the string, carrying its `Field`."""

    field: Field


def field(
    key: str,
    type_: type,
    meaning: str,
    *,
    since: Version | None = None,
    nullable: bool = False,
    column: str | None = None,
    written: bool = True,
) -> str:
    """Declare one key of a `RecordKind` (the arguments are `Field`'s)."""
    declared = _DeclaredKey(key)
    declared.field = Field(key, type_, meaning, since, nullable, column, written)
    return declared


class FieldTable:
    """The base of every map the format defines: its keys, declared with `field`.

    A map nested in a record (a run's ``task``, a FULL_TENSOR value) is a `FieldTable`;
    a record is a `RecordKind`.
    """

    SINCE: ClassVar[Version] = (1, 0)
    """The format version that added it."""
    FIELDS: ClassVar[tuple[Field, ...]] = ()
    """Its keys, in declaration order (filled in by the class statement)."""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        fields = []
        for name, value in list(vars(cls).items()):
            if isinstance(value, _DeclaredKey):
                fields.append(value.field)
                # A plain, interned str, as the keys msgpack decodes are: records are
                # indexed with it in the readers' hot loops.
                setattr(cls, name, sys.intern(str(value)))
        keys = [f.key for f in fields]
        if len(set(keys)) != len(keys):
            raise TypeError(f"{cls.__name__} declares a key twice: {keys}")
        cls.FIELDS = tuple(fields)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Every key of the kind, in declaration order."""
        return tuple(f.key for f in cls.FIELDS)

    @classmethod
    def field_of(cls, key: str) -> Field:
        """The `Field` of ``key``; KeyError when the kind has no such key."""
        for f in cls.FIELDS:
            if f.key == key:
                return f
        raise KeyError(f"{cls.__name__} has no key {key!r}")

    @classmethod
    def column(cls, key: str) -> str:
        """The little-endian numpy dtype of a bin column's entries (``"<i8"``)."""
        dtype = cls.field_of(key).column
        if dtype is None:
            raise KeyError(f"{cls.__name__}.{key} is not a column")
        return dtype


class RecordKind(FieldTable):
    """The base of every record kind: a map whose ``"k"`` (`KIND_KEY`) is `KIND`."""

    KIND: ClassVar[str]
    """The value of the record's ``"k"``."""
