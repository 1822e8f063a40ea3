"""A dump that cannot be written: recording stops once, quietly, and the dump says so.

The writer's file layer runs on an injected disk (`FakeDisk`: ``os.writev`` with a
byte budget) so a failure comes at a chosen write; no TensorFlow. The real training
loop on a tiny file system is in test_disk_full.py.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil

import pytest

import reader
from instrument.dump import recording_stop
from reader import format as fmt
from reader.run import liveness
from tests.synthetic import FINITE, NAN, add_step, make_run
from tfdbg_tui.commands.report import main as report_main
from tfdbg_tui.exit_codes import EXIT_OK


class FakeDisk:
    """``os.writev`` on a disk with ``free`` bytes left: a write that does not fit is
    written in part (as Linux does), and the next one fails with ``ENOSPC``. Deleting
    the writer's reserve gives ``reserve_gives`` bytes back."""

    def __init__(self, monkeypatch, free: int | None = None, reserve_gives: int = 0) -> None:
        self.free = free
        self.failures = 0
        real_writev = os.writev
        real_release = recording_stop.release_reserve

        def writev(fd, buffers):
            if self.free is None:
                return real_writev(fd, buffers)
            if self.free <= 0:
                self.failures += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            data = b"".join(bytes(b) for b in buffers)[: self.free]
            written = real_writev(fd, [data])
            self.free -= written
            return written

        def release(run_path):
            real_release(run_path)
            if self.free is not None:
                self.free += reserve_gives

        monkeypatch.setattr(os, "writev", writev)
        monkeypatch.setattr(recording_stop, "release_reserve", release)


def _dump_warnings(caplog) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name == "instrument.writer" and r.levelno >= logging.WARNING
    ]


def test_a_full_disk_stops_recording_once_and_the_dump_says_where(
    tmp_path, monkeypatch, caplog, capsys
):
    disk = FakeDisk(monkeypatch, reserve_gives=recording_stop.RESERVE_BYTES)
    run = make_run(tmp_path)
    writer = run.writer
    for _ in range(3):
        add_step(run, [FINITE, FINITE, FINITE])
    writer.flush()
    kept = writer.num_executions
    disk.free = 150  # the next flush is cut short, then the disk is full
    for _ in range(20):  # never raises into the program, however often it flushes
        add_step(run, [FINITE, NAN, FINITE])
        writer.flush()
        writer.add_notice("thread", "later notices are dropped too")
    assert writer.stopped is not None and disk.failures >= 1
    stopped_at = writer.stopped.executions
    writer.close()

    warnings = _dump_warnings(caplog)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    line = warnings[0].getMessage()
    assert "\n" not in line and writer.path in line and "No space left on device" in line
    assert f"stopped at execution {stopped_at}" in line and "the dump says so" in line
    assert not os.path.exists(recording_stop.reserve_path(writer.path))

    with reader.DumpReader(writer.path) as dump:
        assert dump.damage == ()  # the write cut short was cut back
        assert not dump.finished  # never an `end` after a stop
        assert dump.num_executions == kept  # what the failed flush held is dropped
        assert dump.writer_state() == liveness.STOPPED  # this process is alive
        [notice] = [n for n in dump.notices() if n.kind == fmt.NOTICE_RECORDING_STOPPED]
        assert notice.is_warning and "No space left on device" in notice.message
        assert notice.details["errno_name"] == "ENOSPC"
        assert notice.details["executions"] == stopped_at
        assert notice.details["file"].endswith(".tfdbg")
    [info] = reader.list_runs(tmp_path)
    assert info.stopped

    assert report_main([str(tmp_path), "--json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["state"] == liveness.STOPPED and report["finished"] is False
    assert fmt.NOTICE_RECORDING_STOPPED in [n["kind"] for n in report["notices"]]


def test_when_not_even_the_notice_fits_the_reader_infers_the_stop(tmp_path, monkeypatch, caplog):
    disk = FakeDisk(monkeypatch)  # deleting the reserve frees nothing (an I/O error)
    run = make_run(tmp_path)
    add_step(run, [FINITE])
    run.writer.flush()
    disk.free = 0
    add_step(run, [FINITE])
    run.writer.flush()
    add_step(run, [FINITE])
    run.writer.close()

    [warning] = _dump_warnings(caplog)
    assert "could not say so" in warning.getMessage()
    with reader.DumpReader(run.path) as dump:
        assert dump.notices() == () or fmt.NOTICE_RECORDING_STOPPED not in {
            n.kind for n in dump.notices()
        }
        assert dump.damage == ()
        assert dump.writer_state() == liveness.STOPPED  # its reserve is gone, no `end`
    assert reader.list_runs(tmp_path)[0].stopped


def test_a_clean_close_gives_the_reserve_back_and_is_finished(tmp_path):
    run = make_run(tmp_path)
    assert os.path.getsize(recording_stop.reserve_path(run.path)) == recording_stop.RESERVE_BYTES
    add_step(run, [FINITE])
    run.writer.close()
    assert not os.path.exists(recording_stop.reserve_path(run.path))
    with reader.DumpReader(run.path) as dump:
        assert dump.metadata.space_reserve
        assert dump.writer_state() == liveness.FINISHED
    assert not reader.list_runs(tmp_path)[0].stopped


def test_a_removed_run_directory_stops_recording_at_the_next_rotation(tmp_path, caplog):
    run = make_run(tmp_path, circular_buffer_size=2)
    add_step(run, [FINITE])
    shutil.rmtree(run.path)
    for _ in range(5):  # rotations: new segments cannot be created
        add_step(run, [FINITE])
    run.writer.close()
    [warning] = _dump_warnings(caplog)
    assert "No such file or directory" in warning.getMessage()
    assert run.writer.stopped is not None


@pytest.mark.parametrize("code", [errno.EDQUOT, errno.EIO, errno.EROFS])
def test_any_write_error_stops_recording_the_same_way(tmp_path, monkeypatch, caplog, code):
    run = make_run(tmp_path)
    add_step(run, [FINITE])
    run.writer.flush()

    def failing_writev(fd, buffers):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "writev", failing_writev)
    add_step(run, [FINITE])
    run.writer.flush()
    run.writer.close()
    [warning] = _dump_warnings(caplog)
    assert os.strerror(code) in warning.getMessage()
    monkeypatch.undo()
    with reader.DumpReader(run.path) as dump:
        assert dump.writer_state() == liveness.STOPPED


def test_state_of_a_stopped_run():
    assert liveness.state_of(False, False, True) == liveness.STOPPED
    assert liveness.state_of(False, True, True) == liveness.STOPPED
    assert liveness.state_of(True, True, True) == liveness.FINISHED
    assert liveness.state_of(False, None) == liveness.UNKNOWN
