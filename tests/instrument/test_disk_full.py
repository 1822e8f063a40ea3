"""A real FULL_HEALTH training loop whose dump fills its disk.

The dump goes onto a 2 MB tmpfs mounted for the test (root on Linux), or, where that
cannot be mounted, onto a disk faked in the program (``os.writev`` fails with ENOSPC
past 1 MB). Either way: the program trains to its end and prints all of its own
output, stderr holds one line about the dump and no traceback, and the dump says
that recording stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import reader
from reader import format as fmt
from reader.run import liveness
from tests.program_runs import PROGRAM_TIMEOUT_S, PROGRAMS, ROOT, program_env

STEPS = 1500  # FULL_HEALTH fills 2 MB in about 1,000 steps of this loop
FAKE_DISK_BYTES = 1 << 20


@pytest.fixture
def tiny_disk(tmp_path):
    """A 2 MB tmpfs, or None where it cannot be mounted."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        yield None
        return
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
            capture_output=True,
        ).returncode
        == 0
    )
    try:
        yield mount_point if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", str(mount_point)], check=True)


@pytest.mark.parametrize("disk", ["tmpfs", "fake"])
def test_training_on_a_full_disk_goes_on_and_the_dump_says_recording_stopped(
    tmp_path, tiny_disk, disk, capsys
):
    if disk == "tmpfs":
        if tiny_disk is None:
            pytest.skip("a tmpfs cannot be mounted here (needs root on Linux)")
        logdir, extra = tiny_disk / "logdir", []
    else:
        logdir, extra = tmp_path / "logdir", [str(FAKE_DISK_BYTES)]
    result = subprocess.run(
        [sys.executable, str(PROGRAMS / "disk_full.py"), str(logdir), str(STEPS), *extra],
        cwd=ROOT,
        env=program_env(),
        capture_output=True,
        text=True,
        timeout=PROGRAM_TIMEOUT_S,
    )

    assert result.returncode == 0, result.stderr[-4000:]
    out = result.stdout.splitlines()
    assert out[0].startswith("RUN ")
    assert out[1:] == [line for line in out[1:] if line.startswith(("step ", "DONE "))]
    assert [line.split(" loss")[0] for line in out if line.startswith("step ")] == [
        f"step {step}" for step in range(0, STEPS, 500)
    ]
    assert out[-1].startswith(f"DONE {STEPS} steps")
    assert "Traceback" not in result.stderr
    about_dump = [line for line in result.stderr.splitlines() if "tfdbg-tui" in line]
    assert len(about_dump) == 1, result.stderr[-4000:]
    run_path = out[0].split(" ", 1)[1]
    assert run_path in about_dump[0] and "No space left on device" in about_dump[0]
    assert "stopped at execution" in about_dump[0]

    with reader.DumpReader(run_path) as dump:
        assert dump.writer_state() == liveness.STOPPED
        assert not dump.finished and dump.damage == ()
        assert 0 < dump.num_executions < 3 * STEPS
        stops = [n for n in dump.notices() if n.kind == fmt.NOTICE_RECORDING_STOPPED]
        if disk == "tmpfs":  # the reserve makes room for it
            assert len(stops) == 1
        for notice in stops:
            assert notice.details["errno_name"] == "ENOSPC"
            assert notice.details["function"] == "train_step"
            assert notice.details["executions"] >= dump.num_executions

    from tfdbg_tui.commands.report import main as report_main

    capsys.readouterr()
    assert report_main([str(logdir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["state"] == liveness.STOPPED and report["finished"] is False
    assert len([n for n in report["notices"] if n["kind"] == fmt.NOTICE_RECORDING_STOPPED]) == len(
        stops
    )
