"""The watch tier on real programs (tests/programs/watched.py): the hit step, the check
that failed, the update gated, the replay's root cause, the saved state and batch, and
no hit in healthy runs (mixed precision's skipped steps, a tf.where over sqrt)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import reader
from instrument.watch.gate import WEIGHTS_EVERY
from reader.run.watch_pair import replay_values_path
from tests.instrument.conftest import run_program
from tests.prefetch import in_background, made, prefetchable
from tests.present import present
from tests.program_runs import PROGRAMS, ROOT, line_of, program_env

WATCHED = PROGRAMS / "watched.py"
BAD_STEP, STEPS, BATCH = 5, 12, 16
CAUGHT = (
    "fit_saturated",
    "loop_saturated",
    "override_saturated",
    "mirrored_saturated",
    "fit_xla_saturated",
    "loop_xla_saturated",
    "fit_spe_saturated",
)
HEALTHY = ("fit_healthy", "mixed_healthy", "where_sqrt", "fit_accumulated", "loop_legacy_random")
PROGRAMS_RUN = (
    CAUGHT
    + ("fit_data_nan", "adam_eps0", "adam_eps0_unheld", "lr_spike", "accumulated_lr_spike")
    + ("fit_divergence",)
    + ("mixed_skips", "mirrored_mixed")
    + ("loop_state_data_nan",)
    + HEALTHY
)


@pytest.fixture(scope="module")
def watched(request):
    """Each program run once, two at a time (a process each, mostly TensorFlow's start
    and tracing): {program: (logdir, {first word: rest of its line})}."""
    return made(request, "watched")


@prefetchable("watched")
def _run_watched(root):
    from concurrent.futures import ThreadPoolExecutor

    logdirs = {program: root / program for program in PROGRAMS_RUN}
    for logdir in logdirs.values():
        logdir.mkdir()
    # In the background the tests run beside it: one process at a time.
    with ThreadPoolExecutor(max_workers=1 if in_background() else 2) as pool:
        outputs = dict(
            zip(
                PROGRAMS_RUN,
                pool.map(
                    lambda program: run_program([str(WATCHED), str(logdirs[program]), program]),
                    PROGRAMS_RUN,
                ),
            )
        )
    runs = {}
    for program, stdout in outputs.items():
        lines: dict[str, str] = {}
        for line in stdout.splitlines():
            word, _, rest = line.partition(" ")
            lines.setdefault(word, rest)
        runs[program] = (logdirs[program], lines)
    return runs


def report(logdir, *args):
    result = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", "--json", str(logdir), *args],
        cwd=ROOT,
        env=program_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("program", CAUGHT)
def test_a_hit_stops_the_job_naming_the_replays_op_and_line(watched, program):
    logdir, lines = watched[program]
    assert lines["STEP"] == f"{BAD_STEP} Log {line_of(WATCHED, '# LOG_LINE')}"
    on_replica = " on replica 1" if program.startswith("mirrored") else ""
    assert (
        f"the loss{on_replica} held NaN or infinity; the update was not applied"
        in (lines["CAUGHT"])
    )
    assert "replayed fully recorded (reproduced)" in lines["CAUGHT"]
    # The gate froze every write from the hit step on: the weights stayed finite.
    assert lines["WEIGHTS_FINITE"] == "True"


@pytest.mark.parametrize("program", CAUGHT)
def test_the_logdir_report_lands_on_the_replay_with_the_watch_beside_it(watched, program):
    logdir, _ = watched[program]
    data = report(logdir)
    source = data["first_alert"]["source"]
    assert (data["first_alert"]["op_type"], source["file"], source["line"]) == (
        "Log",
        str(WATCHED),
        line_of(WATCHED, "# LOG_LINE"),
    )
    assert data["diagnosis"]["pattern"] != "unknown"
    watch = data["watch"]
    assert (watch["hit_step"], watch["check"], watch["verdict"]) == (BAD_STEP, "loss", "reproduced")
    assert watch["replay_run"] == data["run"]
    assert data["replay_of"] == {"run": watch["watched_run"], "step": BAD_STEP}
    # The watched run says the same of itself, and has a row per step.
    own = report(logdir, "--run", watch["watched_run"])
    assert own["watch"]["replay_run"] == data["run"] and own["num_alerts"] == 0
    # The job stopped at the first eager op after the host read the hit (or at its end).
    assert BAD_STEP < own["watch"]["steps"] <= STEPS


@pytest.mark.parametrize("program", CAUGHT)
def test_the_saved_state_and_batch_are_the_step_before_the_hit(watched, program):
    logdir, _ = watched[program]
    watch = report(logdir)["watch"]
    batch = np.load(watch["saved_batch"])
    arrays = [batch[k] for k in batch.files]
    # The batch of the hit step: the one scaled by 1e4.
    assert any(a.dtype == np.float32 and np.abs(a).max() > 1000 for a in arrays)
    state = np.load(watch["saved_state"])
    assert state.files and all(
        np.isfinite(state[k]).all() for k in state.files if state[k].dtype.kind == "f"
    )


@pytest.mark.parametrize("program", CAUGHT)
def test_the_replay_keeps_the_values_of_its_root_cause(watched, program):
    """The replay keeps summaries of the whole step; its values replay, inside its
    directory, keeps the Log's input and output only (FULL_TENSOR of those two ops),
    which the report shows and the proof reruns."""
    logdir, lines = watched[program]
    data = report(logdir)
    values = data["first_alert"]["values"]
    assert values["origin"].startswith("the replay's values run")
    assert values["missing"] is None
    (probs,) = values["inputs"]
    rows = BATCH // 2 if program.startswith("mirrored") else BATCH
    assert probs["name"].endswith("Softmax:0") and probs["shape"] == [rows, 3]
    assert (np.array(probs["value"]) == 0).any()  # saturated: exact zeros
    output = np.array(values["output"]["value"])
    assert np.isneginf(output).sum() == data["first_alert"]["counts"]["neg_inf"]
    proof = data["diagnosis"]["proof"]
    assert proof["holds"] and proof["original"]["neg_inf"] > 0, proof
    assert "the values of Log's inputs and output: " in lines["CAUGHT"]
    # What the values replay is: FULL_TENSOR, of those two ops alone.
    with reader.open_run(logdir, data["run"]) as replay:
        path = present(replay_values_path(replay))
    with reader.open_run(path) as kept:
        assert kept.metadata.tensor_debug_mode == "FULL_TENSOR"
        names = present(present(kept.metadata.replay_of).values)
        assert names[0] == data["first_alert"]["op_name"] and len(names) == 2
        traced = {kept.op(present(t.op_id)).name for t in kept.traces(0, kept.num_traces)}
        assert traced == set(names)
    # Not a run of the logdir: the watched run and its replays only.
    assert len(reader.list_runs(logdir)) == (3 if "xla" in program else 2)


def test_a_nan_in_the_data_keeps_the_batch_as_its_value(watched):
    """The root cause is the step's input: its value, the batch with its NaN, is kept;
    it has no inputs to rerun, and the proof says so."""
    data = report(watched["fit_data_nan"][0])
    values = data["first_alert"]["values"]
    assert values["inputs"] == []
    assert values["missing"] == "Placeholder has no inputs to rerun it on"
    batch = np.array(values["output"]["value"], dtype=float)
    assert batch.shape == (BATCH, 8) and np.isnan(batch).sum() == 1


def test_the_watched_rows_hold_the_loss_and_norms_per_step(watched):
    logdir, _ = watched["fit_saturated"]
    watched_run = report(logdir)["watch"]["watched_run"]
    with reader.open_run(logdir, watched_run) as dump:
        log = dump.watch_log()
    assert log is not None
    steps, loss = log.column(0, "loss")
    assert list(steps) == list(range(len(steps))) and len(steps) > BAD_STEP
    assert np.isfinite(loss[:BAD_STEP]).all() and not np.isfinite(loss[BAD_STEP])
    site = log.sites[0]
    assert sum(c.startswith("gradient_norm:") for c in site.columns) == 4  # 2 Dense x 2
    _, kernel = log.column(0, "weight_norm:" + site.columns[1].split(":", 1)[1])
    # The variables are checked every WEIGHTS_EVERY steps (step 0 here) and at the hit
    # (as the step before left them); their norms are NaN at the other steps.
    checked = [s for s in steps if s % WEIGHTS_EVERY == 0 or s == BAD_STEP]
    assert np.flatnonzero(np.isfinite(kernel)).tolist() == checked
    assert kernel[0] != kernel[BAD_STEP]  # trained in between
    # Every update is measured where Adam's change is checked, before it is written:
    # its first step moves each weight by the learning rate (0.01) or, where the
    # gradient is 0, not at all, so the kernel's change is 0.01 times the root of its
    # moved weights (most of its 8 x 16: a unit whose ReLU is 0 for the whole batch
    # moves none of its 8). The hit step's update did not run: its norm is NaN.
    _, update = log.column(0, "update_norm:" + site.columns[1].split(":", 1)[1])
    assert np.flatnonzero(np.isfinite(update)).tolist() == list(range(BAD_STEP))
    assert 0.01 * np.sqrt(8 * 16 / 4) < update[0] <= 0.01 * np.sqrt(8 * 16) * (1 + 1e-5)


def test_an_update_not_held_is_found_after_it_is_written(watched):
    """With hold_update=False the update is written as it comes: Adam's NaN from step 0
    reaches step 1's loss, whose check of the variables names step 0, as a variable
    found non-finite; its state before is lost, and it is not replayed."""
    logdir, lines = watched["adam_eps0_unheld"]
    assert "sequential/dense/kernel after the update held NaN or infinity" in lines["CAUGHT"]
    assert lines["WEIGHTS_FINITE"] == "False"
    watch = report(logdir)["watch"]
    assert (watch["hit_step"], watch["check"], watch["replay_run"]) == (0, "variable", None)
    with reader.open_run(logdir, watch["watched_run"]) as dump:
        log = present(dump.watch_log())
    kernel = next(c for c in log.sites[0].columns if c.startswith("update_norm:"))
    assert not np.isfinite(log.column(0, kernel)[1]).any()


def test_an_infinite_learning_rate_is_held_back_at_its_own_step(watched):
    logdir, lines = watched["lr_spike"]
    # The learning rate of the step before BAD_STEP is infinite: that step's changes
    # are, from finite gradients, and are not written.
    assert "held NaN or infinity: the optimizer made it" in lines["CAUGHT"]
    assert lines["WEIGHTS_FINITE"] == "True"
    data = report(logdir)
    watch = data["watch"]
    assert (watch["hit_step"], watch["check"], watch["verdict"]) == (
        BAD_STEP - 1,
        "update",
        "reproduced",
    )
    # The replay computes the update (writing it into the watch's own variable, not
    # the program's): its root cause is the schedule's infinity, on the program's line.
    source = data["first_alert"]["source"]
    assert (source["file"], source["line"]) == (str(WATCHED), line_of(WATCHED, "# INF_LR_LINE"))


def test_a_nan_an_update_wrote_as_it_came_is_named_at_the_next_steps_hit(watched):
    """Under Keras' gradient accumulation the optimizer writes in a cond of its own,
    which the watch cannot hold back (a notice says so): the infinite learning rate's
    update at BAD_STEP is written, the next step's loss reads it, and that step's
    check of the variables names the step that wrote them."""
    logdir, lines = watched["accumulated_lr_spike"]
    assert "after the update held NaN or infinity" in lines["CAUGHT"]
    assert "did not hold back" in lines["CAUGHT"]
    data = report(logdir)
    watch = data["watch"]
    assert (watch["hit_step"], watch["check"], watch["replay_run"]) == (BAD_STEP, "variable", None)
    with reader.open_run(logdir, watch["watched_run"]) as dump:
        notices = " ".join(n.message for n in dump.notices())
    assert "written as it comes" in notices or "made as they come" in notices


def test_a_nan_in_the_data_is_replayed_to_the_batch(watched):
    logdir, lines = watched["fit_data_nan"]
    assert lines["WEIGHTS_FINITE"] == "True"
    data = report(logdir)
    assert data["watch"]["hit_step"] == BAD_STEP
    assert data["first_alert"]["op_type"] == "Placeholder"  # the step's own input
    batch = np.load(data["watch"]["saved_batch"])
    assert any(np.isnan(batch[k]).any() for k in batch.files if batch[k].dtype.kind == "f")


def test_an_update_made_in_a_cond_of_the_optimizers_is_measured(watched):
    """Under Keras' gradient accumulation the update runs in a cond of the optimizer's
    own, every second step: its change is measured there (step 0 only accumulates:
    nothing moved), and the step runs as it did unwatched."""
    logdir, lines = watched["fit_accumulated"]
    assert "FINISHED" in lines
    with reader.open_run(logdir) as dump:
        log = present(dump.watch_log())
    columns = [c for c in log.sites[0].columns if c.startswith("update_norm:")]
    for column in columns:
        steps, update = log.column(0, column)
        assert np.isfinite(update).all()
        # Even steps only accumulate; odd ones apply the accumulated gradients.
        assert (update[steps % 2 == 0] == 0.0).all() and (update[steps % 2 == 1] > 0).all()


def test_the_held_update_changes_no_number_of_the_training(tmp_path):
    """Holding the optimizer's writes until they are checked leaves the training's
    numbers as they are unwatched, bit for bit, weights and slots."""
    out = run_program([str(PROGRAMS / "watched_unchanged.py"), str(tmp_path)])
    results = [line.split() for line in out.splitlines() if line.startswith("EQUAL")]
    assert [r[1] for r in results] == ["adamw", "sgd_momentum"]
    assert all(r[2] == "True" and int(r[3]) > 4 for r in results), results


def test_a_legacy_stateful_random_op_is_said_once(watched):
    """tf.random.normal keeps its state in its kernel: the watch cannot put it back for
    a replay, and says so once, at the first trace (a Generator's state it restores:
    loop_state_data_nan says nothing of the kind)."""
    notices = {}
    for program in ("loop_legacy_random", "loop_state_data_nan"):
        logdir, _ = watched[program]
        run = next(r for r in reader.list_runs(logdir) if r.watched)
        with reader.open_run(logdir, run.run_id) as dump:
            notices[program] = [n.message for n in dump.notices()]
    (said,) = [m for m in notices["loop_legacy_random"] if "legacy stateful random" in m]
    assert "RandomStandardNormal" in said and "may not reproduce" in said
    assert not any("legacy stateful random" in m for m in notices["loop_state_data_nan"])


def test_a_custom_loops_own_state_is_left_as_the_last_good_step_left_it(watched):
    """A custom loop's step writes BatchNormalization's moving statistics and a
    tf.random.Generator's state in its forward pass, outside the optimizer: at the hit
    (a NaN in the batch) they are put back as the step before left them, in the model
    and in the saved state, where the NaN batch would have made the moving mean NaN."""
    logdir, lines = watched["loop_state_data_nan"]
    assert lines["WEIGHTS_FINITE"] == "True"
    before, after = json.loads(lines["STATE_BEFORE_BAD"]), json.loads(lines["STATE_AFTER"])
    assert before == after and np.isfinite(before["moving_mean"]).all()
    watch = report(logdir)["watch"]
    assert watch["hit_step"] == BAD_STEP
    saved = np.load(watch["saved_state"])
    (mean,) = (saved[k] for k in saved.files if "moving_mean" in k)
    (state,) = (saved[k] for k in saved.files if "StateVar" in k)
    np.testing.assert_array_equal(mean, np.float32(before["moving_mean"]))
    np.testing.assert_array_equal(state, before["generator"])


def test_a_nan_the_optimizer_makes_from_finite_gradients_is_held_back(watched):
    """Adam with epsilon=0 divides a zero moment by a zero root at step 0 (the kernel's
    row that never gets a gradient): the change is checked before it is written, so the
    update writes nothing, the state before it is saved, and the replay, which computes
    the update and writes nothing, finds the division."""
    logdir, lines = watched["adam_eps0"]
    assert lines["STEP"].split()[0] == "0"
    assert "the update of sequential/dense/kernel held NaN or infinity" in lines["CAUGHT"]
    assert "the update was not applied" in lines["CAUGHT"]
    assert lines["WEIGHTS_FINITE"] == "True"
    data = report(logdir)
    watch = data["watch"]
    assert (watch["hit_step"], watch["check"], watch["verdict"]) == (0, "update", "reproduced")
    assert data["first_alert"]["op_type"] == "RealDiv"
    assert data["first_alert"]["phase"] == "optimizer"
    assert "optimizers/adam.py" in data["diagnosis"]["explanation"]
    assert "epsilon" in data["diagnosis"]["suggestion"]
    saved = np.load(watch["saved_state"])
    assert all(np.isfinite(saved[k]).all() for k in saved.files if saved[k].dtype.kind == "f")
    # Nothing was written: not a slot, not the iteration counter.
    (iterations,) = (saved[k] for k in saved.files if k.endswith("/iteration"))
    assert int(iterations) == 0
    assert all(not saved[k].any() for k in saved.files if k.endswith("_momentum"))


@pytest.mark.parametrize("program", HEALTHY)
def test_healthy_runs_have_no_hit(watched, program):
    logdir, lines = watched[program]
    assert "FINISHED" in lines and "CAUGHT" not in lines
    assert lines["WEIGHTS_FINITE"] == "True"
    data = report(logdir)
    # Under mixed precision the loss scaler's skipped steps never reach the watched
    # update (its inner optimizer's): they are not counted, and are not hits.
    assert data["watch"]["hit_step"] is None
    assert 0 < data["watch"]["steps"] <= STEPS
    assert len(reader.list_runs(logdir)) == 1  # no replay


def test_under_mirrored_strategy_the_replica_that_went_bad_is_named(watched):
    """Only replica 1's half of the bad batch saturates: each replica's loss and
    gradients are checked before they are summed, and every replica's update waits for
    all the checks."""
    logdir, lines = watched["mirrored_saturated"]
    assert "the loss on replica 1 held NaN or infinity" in lines["CAUGHT"]
    watch = report(logdir)["watch"]
    assert watch["replica"] == 1
    # Each update is measured on the first replica's copy of each variable, up to the
    # hit step, whose update did not run.
    with reader.open_run(logdir, watch["watched_run"]) as dump:
        log = present(dump.watch_log())
    kernel = next(c for c in log.sites[0].columns if c.startswith("update_norm:"))
    _, update = log.column(0, kernel)
    assert np.flatnonzero(np.isfinite(update)).tolist() == list(range(BAD_STEP))
    assert 0 < update[0] <= 0.01 * np.sqrt(8 * 16) * (1 + 1e-5)
    batch = np.load(watch["saved_batch"])
    features = batch[batch.files[0]]
    assert features.shape == (BATCH // 2, 8) and np.abs(features).max() > 1000
    # Without a strategy no replica is named.
    assert report(watched["fit_saturated"][0])["watch"]["replica"] is None


def test_a_divergence_is_caught_at_the_overflow_and_its_trends_lead_to_it(watched):
    """SGD whose learning rate multiplies the error at every step: the loss overflows
    some twenty steps in. The hit is that step; the replay names the op that overflowed;
    the watched run's rows make its trends, whose exploding rule fires steps before."""
    logdir, lines = watched["fit_divergence"]
    assert lines["WEIGHTS_FINITE"] == "True"
    data = report(logdir)
    watch = data["watch"]
    assert watch["verdict"] == "reproduced" and watch["check"] in ("loss", "gradient")
    hit = watch["hit_step"]
    assert hit > 5
    assert data["diagnosis"]["pattern"] == "overflow"
    own = report(logdir, "--run", watch["watched_run"])
    first = own["first_anomaly"]
    assert first is not None and first["rule"] == "exploding" and first["step"] < hit
    assert own["lead_steps"] == hit - first["step"]
    with reader.open_run(logdir, watch["watched_run"]) as dump:
        trends = dump.trends()
    assert {"gradient_norm", "weight_norm", "update_norm"} <= set(trends.available())
    row = trends.rows.index("sequential/dense")
    norms = trends.series["gradient_norm"][row]
    # SGD(0.5) moves the weights by half their gradient: the update norms, measured
    # at every step before the hit, say so.
    measured = np.flatnonzero(np.isfinite(trends.series["update_norm"][row]))
    assert trends.steps[measured].tolist() == list(range(hit))
    np.testing.assert_allclose(
        trends.series["update_norm"][row][measured], 0.5 * norms[measured], rtol=1e-4
    )
    # Step by step the gradient grows, finite until the hit step's.
    before = norms[: int(np.searchsorted(trends.steps, hit))]
    assert np.isfinite(before).all() and before[-1] > 1e6 * before[0]


@pytest.mark.parametrize("program", ["mixed_skips", "mirrored_mixed"])
def test_the_loss_scalers_skipped_steps_are_counted_with_the_scale(watched, program):
    """Under mixed precision with a scale too large for float16, the loss scaler skips
    the first steps (halving its scale each time): they are no hits, they count as
    steps, the rows hold the scale and no norms for them, and the loss-scale rule names
    each one, as it does on a per-op recording. Under MirroredStrategy too (Keras'
    scaler decides for every replica at once): there the bad batch of BAD_STEP, on
    replica 1, comes while the scale still overflows, and is one more skip."""
    logdir, lines = watched[program]
    assert "FINISHED" in lines and lines["WEIGHTS_FINITE"] == "True"
    data = report(logdir)
    assert data["watch"]["hit_step"] is None and data["watch"]["steps"] == STEPS
    with reader.open_run(logdir) as dump:
        trends = dump.trends()
    scale = present(trends.loss_scale())
    # Each step the scaler skipped halves the scale for the next; the others keep it.
    halved = scale[1:] == scale[:-1] / 2
    assert (halved | (scale[1:] == scale[:-1])).all()
    skipped = np.flatnonzero(halved)
    assert list(skipped[:2]) == [0, 1]  # the first steps overflow, as made to
    assert not halved.all()  # and the scale comes to fit
    gradient = trends.series["gradient_norm"][trends.rows.index("sequential/dense")]
    kept = np.setdiff1d(np.arange(STEPS - 1), skipped)
    assert np.isnan(gradient[skipped]).all() and np.isfinite(gradient[kept]).all()
    rules = [(r["rule"], r["step"]) for r in data["rules"]]
    assert [step for rule, step in rules if rule == "loss_scale"] == skipped.tolist()


@pytest.mark.parametrize("program", ["fit_xla_saturated", "loop_xla_saturated"])
def test_a_step_compiled_with_xla_is_replayed_with_and_without_it(watched, program):
    logdir, _ = watched[program]
    watch = report(logdir)["watch"]
    assert watch["verdict"] == "reproduced" and watch["xla_replay_run"] not in (
        None,
        watch["replay_run"],
    )
    plain = reader.open_run(logdir, watch["replay_run"])
    compiled = reader.open_run(logdir, watch["xla_replay_run"])
    with plain, compiled:
        assert present(plain.metadata.replay_of).xla is False
        assert present(compiled.metadata.replay_of).xla is True
        # Without XLA is without it: no function of the plain replay was compiled (a
        # custom loop's was, when its replay called tf.function's tracing wrapper).
        assert "xla_traced" not in {n.kind for n in plain.notices()}
        assert "xla_traced" in {n.kind for n in compiled.notices()}
        # Compiled, the step goes non-finite too, at the same op.
        cause = present(compiled.root_cause())
        assert present(cause.op).op_type == "Log"
    # Without XLA no second replay is made.
    assert report(watched["fit_saturated"][0])["watch"]["xla_replay_run"] is None


def test_the_repro_of_a_step_compiled_with_xla_runs_compiled(watched, tmp_path):
    """A real ``tf.function(jit_compile=True)`` step: FULL_TENSOR records nothing inside
    XLA, so the values come from the replay without it, and the proof and `tfdbg-tui
    repro` rerun the op compiled, as it ran. The script, in a fresh process,
    reproduces the -inf, and its fixed line does not."""
    logdir, _ = watched["loop_xla_saturated"]
    data = report(logdir)
    proof = data["diagnosis"]["proof"]
    assert proof["compiled"] and proof["holds"], proof
    assert proof["text"].endswith("all 48 finite (compiled with XLA)")
    out = tmp_path / "bug"

    def run(*args):
        return subprocess.run(
            [sys.executable, *args], cwd=ROOT, env=program_env(), capture_output=True, text=True
        )

    written = run("-m", "tfdbg_tui.cli", "repro", str(logdir), "--run", data["run"], "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert "(compiled with XLA, as the op ran)" in written.stdout
    script = out / "repro.py"
    assert "COMPILED = True" in script.read_text(encoding="utf-8")
    # The replay's values: as many -inf as the proof counted on them (the program's
    # weights are drawn unseeded, so the count is the run's own: 30 and 32 were seen).
    bad = re.search(r"-inf in (\d+) of 48", proof["text"])
    assert bad is not None and int(bad.group(1)) > 0, proof["text"]
    ran, fixed = run(str(script)), run(str(script), "--fixed")
    assert ran.returncode == 1 and ran.stdout.splitlines()[-1].endswith(bad.group(0))
    assert fixed.returncode == 0 and fixed.stdout.splitlines()[-1].endswith("all 48 finite")
    # The same step without XLA is rerun without it.
    assert report(watched["loop_saturated"][0])["diagnosis"]["proof"]["compiled"] is False


def test_the_verdict_of_two_replays():
    from instrument.watch.replay import Replay, _combined

    plain = Replay("a", "/a", "reproduced")
    finite = Replay("a", "/a", "not_reproduced")
    compiled = Replay("b", "/b", "reproduced")
    compiled_finite = Replay("b", "/b", "not_reproduced")
    assert _combined(plain, compiled) == Replay("a", "/a", "reproduced", None, "b")
    assert _combined(finite, compiled) == Replay(
        "b",
        "/b",
        "xla_only",
        None,
        "b",
        values_error="FULL_TENSOR traces nothing inside a step compiled with XLA",
    )
    assert _combined(finite, compiled_finite).verdict == "not_reproduced"
    assert _combined(plain, compiled_finite).verdict == "reproduced"


@pytest.mark.parametrize("jit_compile", [False, True])
def test_the_checked_norms_of_finite_values_never_overflow(jit_compile):
    """A finite gradient whose squares overflow float32 (norm 2e20) is no hit and its
    row holds its true norm; the first NaN or infinity is named; an empty tensor's
    norm is 0; under XLA too (which drops NaN from ``reduce_max``)."""
    import tensorflow as tf

    from instrument.watch.gate import checked_norms, root_mean_square

    huge = tf.fill([4], np.float32(1e20))
    small = tf.constant([3e-30, 4e-30], tf.float32)
    nan = tf.constant([1.0, np.nan], tf.float32)
    inf = tf.constant([np.inf, 1.0], tf.float32)
    empty = tf.zeros([0], tf.float32)

    @tf.function(jit_compile=jit_compile)
    def norms(*tensors):
        return checked_norms(list(tensors))

    values, first_bad = norms(huge, small, empty)
    np.testing.assert_allclose(values.numpy(), [2e20, 5e-30, 0.0], rtol=1e-5)
    assert int(first_bad) == -1
    values, first_bad = norms(huge, small, nan, inf)
    assert int(first_bad) == 2
    assert np.isnan(values.numpy()[2]) and np.isinf(values.numpy()[3])
    np.testing.assert_allclose(values.numpy()[:2], [2e20, 5e-30], rtol=1e-5)
    # Small norms on the common path (no overflow): L2Loss's own, to float32's range.
    values, first_bad = norms(tf.constant([3e-3, 4e-3]), tf.constant([[1.0, 2.0], [2.0, 4.0]]))
    np.testing.assert_allclose(values.numpy(), [5e-3, 5.0], rtol=1e-6)
    assert int(first_bad) == -1
    # The replicas' root mean square of norms as large.
    rms = root_mean_square(tf.constant([[3e19, 0.0, np.nan], [4e19, 2.0, 1.0]], tf.float32))
    np.testing.assert_allclose(rms.numpy()[:2], [np.sqrt(12.5) * 1e19, np.sqrt(2.0)], rtol=1e-5)
    assert np.isnan(rms.numpy()[2])
