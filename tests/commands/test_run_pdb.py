"""`--pdb` (``on_alert="pdb"``) on real programs, pdb driven through a pipe: `culprit`
holds the root cause's values as numpy arrays where they exist (FULL_TENSOR, or an
eager op's own tensors, at hand in every mode), and where they cannot exist (a graph op
in a summary mode) its text gives the exact command that keeps them, which does."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

from tests.commands.conftest import PROGRAMS, ROOT, TIMEOUT_S, run_env, tfdbg_command

SCRIPT = PROGRAMS / "run_script.py"
OWN_ENABLE = PROGRAMS / "pdb_function_log.py"
# Printed by pdb for each command: the culprit's facts as one JSON line.
SHOW = (
    "import json; print('CULPRIT', json.dumps({'values': culprit.values, "
    "'inputs': {k: None if v is None else v.tolist() for k, v in culprit.inputs.items()}, "
    "'output': None if culprit.output is None else culprit.output.tolist(), "
    "'types': [type(v).__name__ for v in [*culprit.inputs.values(), culprit.output]], "
    "'proof': culprit.proof.holds}))"
)


def _culprit(command: list[str], cwd) -> dict:
    """Run ``command`` with pdb's commands on stdin: print the culprit, continue; the
    culprit's facts."""
    done = subprocess.run(
        command,
        cwd=cwd,
        env=run_env(),
        input=f"{SHOW}\ncontinue\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if "CULPRIT " in line)
    return json.loads(line.split("CULPRIT ", 1)[1])


def test_an_eager_ops_values_are_its_own_tensors_in_full_health(workdir):
    """FULL_HEALTH keeps summaries only, but the eager Log's input and output are at
    hand when the program stops at it: `culprit` holds them, and the proof runs."""
    found = _culprit(
        tfdbg_command("run", "--pdb", "--no-open", "--", "python", str(SCRIPT))
        + ["--data", "data/values.txt"],
        workdir,
    )
    assert found["values"].startswith("the op's own call")
    assert list(found["inputs"].values()) == [[0.0, 1.0, 2.5]]
    assert found["output"][:2] == [float("-inf"), 0.0]
    assert found["types"] == ["ndarray", "ndarray"]
    assert found["proof"] is True


def test_a_graph_ops_missing_values_name_the_command_that_keeps_them(workdir):
    """Inside a tf.function, in FULL_HEALTH, the Log's values never existed outside the
    graph: `culprit` says the exact command (FULL_TENSOR of the Log and its input's op
    only); run as said, it stops with both values and proves the fix."""
    program = ["python", str(SCRIPT), "--data", "data/values.txt", "--function"]
    found = _culprit(tfdbg_command("run", "--pdb", "--no-open", "--", *program), workdir)
    assert found["inputs"] == {"mul:0": None} and found["output"] is None
    expected = shlex.join(
        ["tfdbg-tui", "run", "--pdb", "--mode", "FULL_TENSOR", "--op-regex", "^(Log|Mul)$"]
        + ["--", *program]
    )
    assert found["values"].endswith(f"run: {expected}"), found["values"]
    # The command, as said (tfdbg-tui itself: this interpreter's; in a pipe it prints
    # the report instead of opening the app).
    said = shlex.split(found["values"].split("run: ", 1)[1])
    again = _culprit(tfdbg_command(*said[1:]), workdir)
    assert again["values"] == "FULL_TENSOR"
    assert again["inputs"] == {"mul:0": [0.0, 1.0, 2.5]}
    assert again["output"][0] == float("-inf") and again["proof"] is True


def test_a_program_that_enables_its_own_dump_is_told_the_call(tmp_path):
    """`on_alert="pdb"` in the program's own call: no command line can change its
    mode, so `culprit` names the call that keeps the values."""
    found = _culprit([sys.executable, str(OWN_ENABLE), str(tmp_path / "logdir")], ROOT)
    assert re.search(
        r"enable_dump_debug_info\(\.\.\., tensor_debug_mode=\"FULL_TENSOR\", "
        r"op_regex='\^\(Log\|Relu\)\$', on_alert=\"pdb\"\) in the program, then python ",
        found["values"],
    ), found["values"]
