"""Notices (format 1.2): read in order, followed live, kept when their kind is unknown,
skipped with a damage notice when malformed; dumps without them have none."""

from __future__ import annotations

import msgpack

import reader
from reader import format as fmt
from tests.synthetic import FINITE, add_step, make_run, segment_path


def test_notices_are_read_in_order_and_followed(tmp_path):
    run = make_run(str(tmp_path))
    add_step(run, [FINITE])
    run.writer.add_notice(
        fmt.NOTICE_XLA_TRACED,
        "train_step is compiled  with\nXLA",
        level=fmt.NOTICE_INFO,
        details={"function": "train_step"},
    )
    run.writer.flush()
    dump = reader.open_run(str(tmp_path))
    (notice,) = dump.notices()
    assert (notice.kind, notice.level, notice.details) == (
        "xla_traced",
        "info",
        {"function": "train_step"},
    )
    assert notice.message == "train_step is compiled with XLA"  # one line
    assert not notice.is_warning and notice.time is not None
    run.writer.add_notice("from_the_future", "a kind this reader does not know", level="shout")
    run.writer.flush()
    report = dump.update()
    assert report.new_notices == 1 and report.changed
    assert [(n.kind, n.level) for n in dump.notices()] == [
        ("xla_traced", "info"),
        ("from_the_future", "warning"),
    ]
    run.writer.close()
    dump.close()


def test_a_malformed_notice_is_skipped_with_a_damage_notice(tmp_path):
    run = make_run(str(tmp_path))
    run.writer.close()
    with open(segment_path(run.writer.path, fmt.STREAM_METADATA), "ab") as file:
        file.write(msgpack.packb({"k": fmt.KIND_NOTICE, "kind": 7}))
    dump = reader.open_run(str(tmp_path))
    assert dump.notices() == ()
    assert any("notice" in line for line in dump.damage)
    dump.close()


def test_a_dump_without_notices_has_none(tmp_path):
    run = make_run(str(tmp_path))
    add_step(run, [FINITE])
    run.writer.close()
    with reader.open_run(str(tmp_path)) as dump:
        assert dump.notices() == ()
