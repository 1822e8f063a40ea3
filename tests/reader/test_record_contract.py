"""The record contract (`reader.contract`) against docs/format.md, both ways.

Every field table of docs/format.md is marked ``<!-- fields: KIND -->`` (a record
kind's ``k``, or the name of a map a record holds). Each marked table must list
exactly the keys the contract declares as written, with the same type (and nil where
the contract allows it), and, where its meaning starts "since X.Y", the version the
contract gives.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from reader import format as fmt
from reader.contract import (
    KIND_KEY,
    NESTED_MAPS,
    RECORD_KINDS,
    ExecRecord,
    ExecsChunk,
    FieldTable,
    ProgressAlertMap,
    ReplayOfMap,
    TaskMap,
    TracesChunk,
    ValueMap,
    WatchMap,
)

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "format.md"
MAPS: dict[str, type[FieldTable]] = {
    "task": TaskMap,
    "watch": WatchMap,
    "replay_of": ReplayOfMap,
    "value": ValueMap,
    "progress_alert": ProgressAlertMap,
}
TABLES: dict[str, type[FieldTable]] = {**{k.KIND: k for k in RECORD_KINDS}, **MAPS}
DOC_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "bin": bytes, "map": dict}
SINCE = re.compile(r"^since (\d+)\.(\d+)\b")


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


def doc_type(text: str) -> tuple[type, bool]:
    """(python type, nil allowed) of a type cell: ``[int] or nil`` -> (list, True)."""
    if text.startswith("["):
        depth, end = 0, 0
        while end == 0 or depth:
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            end += 1
        found: type = list
        rest = text[end:]
    else:
        word, _, rest = text.partition(" ")
        found = DOC_TYPES[word.strip(",")]
    return found, bool(re.search(r"\bnil\b", rest))


def test_doc_type_reads_the_spellings_of_the_tables() -> None:
    assert doc_type("[int or nil]") == (list, False)
    assert doc_type("[str] or nil") == (list, True)
    assert doc_type("str, nil or absent") == (str, True)
    assert doc_type("map or absent") == (dict, False)
    assert doc_type("bin") == (bytes, False)


def documented_fields() -> dict[str, dict[str, tuple[str, str]]]:
    """Per marked table: key -> (type cell, meaning cell)."""
    tables: dict[str, dict[str, tuple[str, str]]] = {}
    current: dict[str, tuple[str, str]] | None = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        marker = re.fullmatch(r"<!-- fields: (\w+) -->", line.strip())
        if marker:
            assert marker.group(1) not in tables, f"two tables of {marker.group(1)}"
            current = tables[marker.group(1)] = {}
            continue
        if current is None:
            continue
        if not line.startswith("|"):
            if not line.strip() and current:
                current = None  # the blank line after the table
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("key", "---"):
            continue
        keys = re.findall(r"`(\w+)`", cells[0])
        types = _split_top_level(cells[1]) if len(keys) > 1 else [cells[1]]
        if len(types) == 1:
            types = types * len(keys)
        assert len(types) == len(keys), f"types of {keys}: {cells[1]!r}"
        for key, type_cell in zip(keys, types):
            current[key] = (type_cell, cells[2])
    return tables


def test_every_table_is_a_kind_or_a_map_of_the_contract() -> None:
    assert set(documented_fields()) == set(TABLES)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_table_and_the_contract_agree(name: str) -> None:
    table = TABLES[name]
    documented = documented_fields()[name]
    documented.pop(KIND_KEY, None)  # the header's table names `k` too
    written = {f.key: f for f in table.FIELDS if f.written}
    assert sorted(documented) == sorted(written), "documented keys vs the contract's"
    for key, (type_cell, meaning) in documented.items():
        field = written[key]
        assert doc_type(type_cell) == (field.type, field.nullable), f"{key}: {type_cell!r}"
        since = SINCE.match(meaning)
        doc_since = (int(since.group(1)), int(since.group(2))) if since else None
        assert doc_since == field.since, f"{key}: the docs say since {doc_since}"


def test_every_since_is_a_version_after_its_kind_and_not_after_the_format() -> None:
    for table in TABLES.values():
        for field in table.FIELDS:
            if field.since is not None:
                assert table.SINCE < field.since <= fmt.FORMAT_VERSION, field


def test_reader_format_names_every_kind() -> None:
    names = {v for k, v in vars(fmt).items() if k.startswith("KIND_")}
    assert names == {kind.KIND for kind in RECORD_KINDS}


def test_the_keys_chunks_share_mean_the_same() -> None:
    """`put_summaries` writes `sc`, `s` and `m` alike in both chunks, and an execution of
    a chunk is handed out with the chunk's per-output columns as its own keys."""
    for key in (TracesChunk.SUMMARY_WIDTH, TracesChunk.SUMMARIES, TracesChunk.MAGNITUDES):
        ours, theirs = TracesChunk.field_of(key), ExecsChunk.field_of(key)
        assert (ours.type, ours.column, ours.since) == (theirs.type, theirs.column, theirs.since)
    for key in (ExecsChunk.OUTPUTS, ExecsChunk.DEVICES, ExecsChunk.DTYPES):
        assert key in ExecRecord.keys()


def test_nested_maps_are_held_by_dict_or_list_keys() -> None:
    for (holder, key), _ in NESTED_MAPS.items():
        assert holder.field_of(key).type in (dict, list)


def test_a_key_declared_twice_is_refused() -> None:
    from reader.contract.fields import RecordKind, field

    with pytest.raises(TypeError, match="twice"):

        class Twice(RecordKind):
            KIND = "twice"
            A = field("a", int, "a")
            B = field("a", int, "b")
