"""`tfdbg-tui run --ab`'s comparison names each run by what it is, also when the good
run is the variant's (B, under ``.../B/``): synthetic runs stand in for the program's
two runs (no TensorFlow; tests/commands/test_run_ab.py runs real ones)."""

from __future__ import annotations

import os

import pytest

from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run
from tfdbg_tui import exit_codes as codes
from tfdbg_tui.commands import ab_run, run
from tfdbg_tui.commands.program_runs import Outcome


def _fake_child(harmful: str):
    """A `run_child` that records a synthetic run into the logdir it is given: a
    harmful -inf in Log in run ``harmful`` ("A" or "B"), finite values in the other;
    its run file says the program made a tf.function that asked for XLA."""

    def run_child(program, arguments, *, env=None, stdout=None) -> Outcome:
        logdir = arguments[arguments.index("--logdir") + 1]
        dump = make_run(logdir)
        add_step(dump, [FINITE, FINITE, FINITE])
        add_step(
            dump, [FINITE, NEG_INF, NAN] if logdir.endswith(harmful) else [FINITE, FINITE, FINITE]
        )
        dump.writer.close()
        return Outcome(0, {"run": dump.path, "functions": 1, "num_xla_functions": 1})

    return run_child


@pytest.mark.parametrize("harmful", ["A", "B"])
def test_the_comparison_names_the_runs_by_what_they_are(tmp_path, monkeypatch, capsys, harmful):
    """Run A (as it is) in .../A/, run B (XLA off) in .../B/. When A holds the NaN, B is
    the good run: the diff printed "A .../B/..." and "B .../A/...". Each line now
    names the run by what it is beside good or bad, and the divergence's words too."""
    monkeypatch.setattr(ab_run, "run_child", _fake_child(harmful))
    script = tmp_path / "train.py"
    script.write_text("")
    logdir = tmp_path / "ab"
    status = run.main(
        ["--ab", "xla", "--no-open", "--logdir", str(logdir), "--", "python", str(script)]
    )
    out = capsys.readouterr().out
    assert status == codes.EXIT_OK, out
    good, bad = ("B", "A") if harmful == "A" else ("A", "B")
    what = {"A": "as it is", "B": "XLA off"}
    lines = out.splitlines()
    for line, side, letter in ((lines[0], "good", good), (lines[1], "bad", bad)):
        assert line.startswith(f"{side} ({what[letter]}) "), line
        assert f" {logdir / letter}{os.sep}" in line, line
    assert f"non-finite in bad ({what[bad]}), finite in good ({what[good]})" in out
    assert f"  good ({what[good]}) #" in out and f"  bad ({what[bad]}) #" in out
    # No run is called by a letter that is not its directory's.
    for line in lines:
        for letter in "AB":
            if line.startswith(f"{letter} "):
                assert f"{os.sep}{letter}{os.sep}" in line, line


@pytest.mark.parametrize("serve", [False, True], ids=["terminal", "serve"])
def test_in_a_terminal_the_tui_compares_the_bad_run_with_the_good_one_by_those_names(
    tmp_path, monkeypatch, serve
):
    """The TUI shows the bad run beside the good one, and its narrow columns call them
    "good" and "bad" (tests/tui/test_tui_compare_names.py shows where). With `--serve`
    the browser view gets the same command line, and the port and host."""
    from tfdbg_tui.commands import app_main, program_runs
    from tfdbg_tui.commands import serve as serve_command

    opened: list[list[str]] = []
    monkeypatch.setattr(ab_run, "run_child", _fake_child("A"))
    monkeypatch.setattr(program_runs, "in_terminal", lambda: not serve)
    opener = serve_command if serve else app_main

    def main(argv):
        opened.append(argv)
        return codes.EXIT_OK

    monkeypatch.setattr(opener, "main", main)
    script = tmp_path / "train.py"
    script.write_text("")
    logdir = tmp_path / "ab"
    options = ["--serve", "--port", "0"] if serve else []
    assert (
        run.main(["--ab", "xla", *options, "--logdir", str(logdir), "--", "python", str(script)])
        == codes.EXIT_OK
    )
    argv = opened[0]
    assert argv[0] == str(logdir / "A")  # the bad run, shown
    assert argv[argv.index("--compare") + 1].startswith(str(logdir / "B"))
    assert argv[argv.index("--name-a") + 1] == "good"
    assert argv[argv.index("--name-b") + 1] == "bad"
    if serve:
        assert argv[-4:] == ["--port", "0", "--host", "127.0.0.1"]
