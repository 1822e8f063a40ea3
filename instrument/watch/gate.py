"""The watch tier inside the training step's graph: one fused finiteness check (per
replica under a strategy), the update gated on it, the sticky flag, the kept batch
and state, the ring of step rows, and nothing read by the host.

Built when an optimizer's ``apply`` is traced (`WatchSite.guarded_apply`):

- **The check.** The loss (the target of the ``GradientTape.gradient`` call that made
  the gradients) and every gradient are reduced to their L2 norms (``L2Loss``: one
  read, no temporary), which a NaN or an infinity anywhere makes non-finite; one
  ``is_finite`` of their sum decides the step. Only when that sum is not finite are
  the tensors checked one by one (a ``cond``), to name the first bad one and to tell
  an overflowing sum of finite values from a non-finite value (whose norms are then
  taken again, scaled, so the row holds a finite gradient's true norm however large).
  The check is a value, never ``CheckNumerics`` or ``Assert``, which XLA removes.
- **The gate.** The optimizer's update runs in a ``cond`` on the check and on the
  sticky hit flag, its writes held back until the changes they make to the trained
  variables are checked too (instrument/watch/held_update.py): a bad step writes
  nothing (not the weights, not the slots, not the iteration counter), whether its
  loss, a gradient or the optimizer's own arithmetic (Adam with ``epsilon=0``) went
  bad, and after the first hit no step writes anything, so the state before the hit
  survives until the host has read it. The variables are checked the same way (by
  their norms) after every `WEIGHTS_EVERY`-th update and at a step whose check failed
  (`_checked_weights`): a NaN written by a write the update could not hold sets the
  flag too (the ``variable`` check), and from then on nothing is written.
- **What is kept.** The batch the step received: a Keras step's, read from its
  iterator inside the graph, copied into variables of its own every step until the
  hit; a custom loop's, passed in as the step function's arguments, kept on the host
  by reference (instrument/watch/kept_calls.py: a copy in the graph would cost a cond
  over the function's arguments). The variables the step writes besides its
  optimizer's update (BatchNormalization's moving statistics, seed generators' state)
  as the last good step left them, restored when the step is skipped
  (instrument/watch/step_state.py). A row per step in a ring: the loss, and per
  variable its gradient's L2 norm, (where checked) its value's and its update's (the
  held update's check), written by a scatter of the one row (a sliced assign copied
  the whole ring every step).
- **The flag.** One int64 vector, read once a step and written at the first hit only:
  the step, the site, the row's column that failed and the replica of the first hit.

The host reads the flag, the step counter and the ring from a thread of its own every
half second (instrument/watch/watcher.py): the program gets no sync it did not have.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from instrument.tf_internals.eager_runtime import unmirrored_variable
from instrument.watch import step_state
from instrument.watch.held_update import HeldUpdate, WriteConflict
from instrument.watch.kept_calls import KeptCalls
from instrument.watch.norms import checked_norms, root_mean_square, value_of
from reader.contract.metadata import CHECK_GRADIENT, CHECK_LOSS, CHECK_UPDATE, CHECK_VARIABLE

# Steps kept in the ring of per-step statistics. The host reads it every half second;
# a program faster than RING_STEPS steps in that time loses the oldest rows (the
# check and the gate never miss a step).
RING_STEPS = 4096

# The variables are checked after every this many steps' updates (and at a step whose
# loss or gradients failed): `_checked_weights`.
WEIGHTS_EVERY = 16

# Per thread: whether a replay is being traced (its apply writes nothing and builds no
# watch ops). Per graph and replica: the loss of the tape.gradient call last traced.
_local = threading.local()
_losses: weakref.WeakKeyDictionary[Any, dict[int, Any]] = weakref.WeakKeyDictionary()


def note_loss(target: Any) -> None:
    """Remember ``target`` (a ``GradientTape.gradient`` target being traced) as the loss
    of its graph and replica: the check of the apply that follows covers it. Under a
    ``MirroredStrategy`` every replica's step is traced into the one graph, in turn:
    each replica's check takes its own replica's loss."""
    graph = getattr(target, "graph", None)
    if (
        graph is not None
        and getattr(target, "dtype", None) is not None
        and target.dtype.is_floating
    ):
        _losses.setdefault(graph, {})[traced_replica() or 0] = target


def loss_of(graph: Any) -> Any:
    """The loss noted for ``graph`` or a graph it is nested in, of the replica being
    traced, or None."""
    replica = traced_replica() or 0
    while graph is not None:
        losses = _losses.get(graph)
        if losses:
            return losses.get(replica)
        graph = getattr(graph, "outer_graph", None)
    return None


def traced_replica() -> int | None:
    """The replica whose step is being traced, under a tf.distribute strategy with
    several; None otherwise."""
    import tensorflow as tf

    if not tf.distribute.has_strategy():
        return None
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync < 2:
        return None
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    return int(replica) if replica is not None else 0


def replaying() -> bool:
    """Whether this thread is tracing a replay (`replay_tracing`)."""
    return getattr(_local, "replaying", False)


class replay_tracing:  # noqa: N801 - a context manager, used as a statement
    """While tracing a replay: watched applies write nothing and add no watch ops."""

    def __enter__(self) -> None:
        _local.replaying = True

    def __exit__(self, *exc: object) -> None:
        _local.replaying = False


@dataclass
class KeptBatch:
    """The batch of the step, copied every step until the hit: its tensors' variables
    and how to put them back in the step function's arguments."""

    variables: list[Any]
    """One variable a tensor, of unknown shape."""
    names: list[str]
    """A name per tensor (the argument's path: ``"x"``, ``"data[0]"``)."""

    def values(self) -> list[Any]:
        return [v.read_value() for v in self.variables]


@dataclass
class WatchFlags:
    """The sticky hit flag, one for the process: the first hit anywhere freezes every
    watched update. Made at the first trace of a watched step (``init_scope``)."""

    state: Any
    """int64 [4], every element -1 before the first hit, then (read once a step,
    written at the hit): `FLAG_STEP`, the step (of the site that hit) of the first hit;
    `FLAG_SITE`, the `WatchSite.site_id` that hit; `FLAG_COLUMN`, the column of the
    site's step row (`WatchSite.columns`) whose tensor failed the check: the loss,
    a gradient, or a variable after the update; `FLAG_REPLICA`, the replica whose
    values failed it first under a tf.distribute strategy (0 otherwise)."""
    kept_state: list[tuple[Any, Any]] = field(default_factory=list)
    """(variable, copy) of the variables watched steps write besides their optimizer's
    update, as the last good step left them (instrument/watch/step_state.py)."""

    def hit_step(self) -> Any:
        """In the graph: the step of the first hit, -1 before it."""
        return self.state.read_value()[FLAG_STEP]


# Says a notice once (`Watcher.say_once`): (key, message).
Notice = Callable[[str, str], None]

# The elements of `WatchFlags.state`.
FLAG_STEP, FLAG_SITE, FLAG_COLUMN, FLAG_REPLICA = range(4)
NO_HIT = (-1, -1, -1, -1)


def make_flags() -> WatchFlags:
    import tensorflow as tf

    with tf.init_scope():
        return WatchFlags(
            unmirrored_variable(tf.constant(NO_HIT, tf.int64), "tfdbg_tui_watch_flags")
        )


def check_of_column(column: int, variables: int) -> tuple[str, int | None]:
    """The check a failed column of a step row names (`WATCH_CHECKS`) and which variable
    (None for the loss): columns are the loss, each variable's gradient, each variable
    (checked after the update), then each variable's update."""
    if column <= 0:
        return CHECK_LOSS, None
    if column <= variables:
        return CHECK_GRADIENT, column - 1
    if column <= 2 * variables:
        return CHECK_VARIABLE, column - 1 - variables
    return CHECK_UPDATE, column - 1 - 2 * variables


@dataclass
class WatchSite:
    """One optimizer's watched apply: its step counter, its ring of step rows, its kept
    batch and what a replay calls. Made at the first trace of the optimizer's
    ``apply``; a retrace (a new input signature, a new ``tf.function``) reuses it."""

    site_id: int
    optimizer_name: str
    variable_names: list[str]
    steps: Any
    """int64: the steps this apply saw (skipped ones included)."""
    ring: Any
    """float32 [RING_STEPS, columns]: per step, the loss, then per variable the
    gradient's L2 norm, then per variable its value's L2 norm where the step checked
    it (`_checked_weights`; NaN elsewhere), then per variable its update's L2 norm
    (the held update's check; NaN at a step whose update did not run)."""
    state: list[Any] = field(default_factory=list)
    """The variables a custom loop's step writes besides its optimizer's update, copied
    after each good update (`step_state.written_state`); a Keras step's are copied
    before its forward pass instead."""
    optimizer: Any = None
    """The optimizer whose apply this is."""
    update_sums: Any = None
    """float32 [variables]: the ``L2Loss`` of each variable's change made in a graph
    nested in the update's (`held_update.HeldUpdate`), zeroed once read."""
    variables: list[Any] = field(default_factory=list)
    """The variables the apply trains, and then the optimizer's own."""
    kept_batches: dict[int, KeptBatch] = field(default_factory=dict)
    """A Keras step's batch, kept in the graph, per replica (0 without a strategy)."""
    compiled: bool = False
    """The step function compiles with XLA (Keras' ``jit_compile``, or
    ``tf.function(jit_compile=True)``): its hit step is replayed with and without."""
    replicas: int = 1
    """The replicas that run the step (a tf.distribute strategy's)."""
    kept_calls: KeptCalls | None = None
    """A custom loop's calls of its step function, kept on the host."""
    step_function: Any = None
    """What a replay calls (`instrument.watch.replay`), or None: ``("keras", model,
    data)`` or ``("call", python_function)``."""
    loss_scale: Any = None
    """The dynamic loss scale of the ``LossScaleOptimizer`` whose inner optimizer this
    site is, or None: its rows then end with `LOSS_SCALE_COLUMNS`."""

    @property
    def columns(self) -> list[str]:
        return (
            ["loss"]
            + [f"gradient_norm:{n}" for n in self.variable_names]
            + [f"weight_norm:{n}" for n in self.variable_names]
            + [f"update_norm:{n}" for n in self.variable_names]
            + (list(LOSS_SCALE_COLUMNS) if self.loss_scale is not None else [])
        )


# A loss-scaled site's last columns: the scale its step used, and 1 on a step the loss
# scaler skipped (its gradients overflowed: the inner optimizer did not run, and the
# row's norms are NaN, not recorded).
LOSS_SCALE_COLUMNS = ("loss_scale", "skipped")


@dataclass
class Hit:
    """A hit the host has read: which site and step, and the check that failed."""

    site: WatchSite
    step: int
    check: str
    tensor: str
    """What failed the check: "the loss", "the gradient of dense/kernel", ..."""
    replica: int | None = None
    """The replica whose values failed it first, under a tf.distribute strategy."""


def make_site(
    site_id: int, optimizer: Any, variables: list[Any], loss_scale: Any = None
) -> WatchSite:
    """The in-graph state of a watched apply, created eagerly (``init_scope``);
    ``loss_scale``: the scale variable of the ``LossScaleOptimizer`` around it."""
    import tensorflow as tf

    columns = 1 + 3 * len(variables) + (len(LOSS_SCALE_COLUMNS) if loss_scale is not None else 0)
    with tf.init_scope():
        return WatchSite(
            site_id=site_id,
            optimizer_name=str(getattr(optimizer, "name", "optimizer")),
            variable_names=[variable_name(v) for v in variables],
            variables=list(variables) + list(getattr(optimizer, "variables", [])),
            optimizer=optimizer,
            update_sums=unmirrored_variable(
                tf.zeros([len(variables)], tf.float32), "tfdbg_tui_watch_update_sums"
            ),
            steps=unmirrored_variable(tf.constant(0, tf.int64), "tfdbg_tui_watch_steps"),
            ring=unmirrored_variable(
                tf.zeros([RING_STEPS, columns], tf.float32), "tfdbg_tui_watch_ring"
            ),
            loss_scale=loss_scale,
        )


def keep_batch(site: WatchSite, tensors: list[Any], names: list[str], replica: int = 0) -> None:
    """Make the variables that keep the step's batch (once per site and replica)."""
    import tensorflow as tf

    if replica in site.kept_batches:
        return
    with tf.init_scope():
        variables = [
            unmirrored_variable(
                tf.zeros([0], t.dtype) if t.dtype != tf.string else tf.constant([], tf.string),
                "tfdbg_tui_watch_batch",
                shape=tf.TensorShape(None),
            )
            for t in tensors
        ]
    site.kept_batches[replica] = KeptBatch(variables, names)


def local_check(loss: Any, grads: list[Any]) -> tuple[Any, Any]:
    """In the step's graph (a replica's, under a strategy): the L2 norms of the loss
    (zero without one) and of each gradient, and the first of them that is not finite
    (0 the loss, k the k-th gradient; -1 when all are), as `checked_norms`."""
    import tensorflow as tf

    checked = [loss if loss is not None else tf.zeros([], tf.float32)]
    checked += [_dense(g) for g in grads]
    return checked_norms(checked)


def keep_batch_in_graph(flags: WatchFlags, kept: KeptBatch, batch: list[Any]) -> None:
    """In the step's graph: copy the step's batch into ``kept`` until the first hit."""
    _copy_batch_if(flags.hit_step() < 0, kept, batch)


def keep_batch_after_call(
    flags: WatchFlags, site: WatchSite, kept: KeptBatch, batch: list[Any]
) -> None:
    """In the graph that calls a step compiled with XLA (where a variable cannot change
    its shape), after the call: copy the batch it was called with into ``kept`` until
    the first hit, and at the step of the hit (the flag and the count are read after
    the call, which writes them)."""
    import tensorflow as tf

    hit_step = flags.hit_step()
    this_step = site.steps.read_value() - 1
    _copy_batch_if(tf.logical_or(hit_step < 0, tf.equal(hit_step, this_step)), kept, batch)


def _copy_batch_if(condition: Any, kept: KeptBatch, batch: list[Any]) -> None:
    """In the graph: copy ``batch`` into ``kept``'s variables when ``condition`` holds."""
    import tensorflow as tf

    def copy_batch() -> Any:
        for variable, tensor in zip(kept.variables, batch):
            variable.assign(tensor)
        return tf.constant(True)

    tf.cond(condition, copy_batch, lambda: tf.constant(False))


def guarded_apply(
    flags: WatchFlags,
    site: WatchSite,
    apply: Any,
    grads: list[Any],
    variables: list[Any],
    batch: list[Any],
    on_notice: Notice | None = None,
    hold: bool = True,
) -> None:
    """Build, in the step's graph, the check, the gated ``apply()`` and the row."""
    import tensorflow as tf

    norms, first_bad = local_check(loss_of(tf.compat.v1.get_default_graph()), grads)
    kept = site.kept_batches.get(0)
    if kept is not None and batch:
        keep_batch_in_graph(flags, kept, batch)
    gated_update(flags, site, norms, first_bad, apply, variables, on_notice=on_notice, hold=hold)


def guarded_apply_across_replicas(
    flags: WatchFlags,
    site: WatchSite,
    distribution: Any,
    norms: Any,
    first_bad: Any,
    apply: Any,
    variables: list[Any],
    on_notice: Notice | None = None,
    hold: bool = True,
) -> None:
    """Build, in the cross-replica context of a ``merge_call`` (a ``MirroredStrategy``'s
    step), the gated ``apply()`` over every replica's `local_check` (``norms`` and
    ``first_bad``, per replica): one replica's bad value keeps every replica's update
    out, and the first such replica is the one the hit names. The row holds the root
    mean square over the replicas of each norm."""
    import tensorflow as tf

    each_bad = tf.stack(distribution.experimental_local_results(first_bad))
    replica = tf.argmax(tf.cast(each_bad >= 0, tf.int32), output_type=tf.int64)
    mean_norms = root_mean_square(tf.stack(distribution.experimental_local_results(norms)))
    gated_update(
        flags,
        site,
        mean_norms,
        tf.gather(each_bad, replica),
        apply,
        variables,
        replica,
        on_notice=on_notice,
        hold=hold,
    )


def gated_update(
    flags: WatchFlags,
    site: WatchSite,
    norms: Any,
    first_bad: Any,
    apply: Any,
    variables: list[Any],
    replica: Any = None,
    on_notice: Notice | None = None,
    hold: bool = True,
) -> None:
    """The update run on the check (``norms`` of the loss and each gradient, and the
    ``first_bad`` of them, -1 for none), its writes held and made when its changes are
    finite too, the variables checked (`WEIGHTS_EVERY`), the sticky flag set at a first
    hit, the row written and the step counted.

    The common step pays for the gate's ``cond``, an ``L2Loss`` of each change, the
    write's ``cond``, the row's scatter, the count and a handful of scalar ops; what a
    hit needs (the failed column, the flag's write) is built in a ``cond`` that only a
    hit takes. ``on_notice`` says once what the update could not hold. With ``hold``
    false (`instrument.watch`'s ``hold_update``) the update is written as it comes."""
    import tensorflow as tf

    state = flags.state.read_value()
    no_hit_yet = state[FLAG_STEP] < 0
    step = site.steps.read_value()
    open_gate = tf.logical_and(first_bad < 0, no_hit_yet)

    unmeasured = tf.fill([len(variables)], float("nan"))
    no_bad_update = tf.constant(-1, tf.int64)

    def skip() -> Any:
        step_state.restore(flags.kept_state)
        return unmeasured, no_bad_update

    def held_update() -> Any:
        # The optimizer's writes are held while its update is traced, and made only
        # when every change they make to a trained variable is finite
        # (instrument/watch/held_update.py).
        with HeldUpdate(variables, site.update_sums) as held:
            apply()
        if held.made_as_they_came and on_notice is not None:
            on_notice(
                "not_held",
                "some of the optimizer's writes are made as they come (a sparse update, "
                "or Keras' gradient accumulation, whose update runs in a cond of its "
                "own): a NaN it makes there from finite gradients is found after it is "
                "written, at the next step's check or within "
                f"{WEIGHTS_EVERY} steps",
            )
        updates, bad_update = held.check()

        def write() -> Any:
            held.write()
            step_state.take_copies(flags.kept_state, site.state)
            return tf.constant(True)

        def keep_before() -> Any:
            step_state.restore(flags.kept_state)
            return tf.constant(False)

        written = tf.cond(bad_update < 0, write, keep_before)
        with tf.control_dependencies([written]):
            return tf.identity(updates), tf.identity(bad_update)

    def update_as_it_comes() -> Any:
        apply()
        step_state.take_copies(flags.kept_state, site.state)
        return unmeasured, no_bad_update

    try:
        updates, bad_update = tf.cond(open_gate, held_update if hold else update_as_it_comes, skip)
    except WriteConflict as conflict:
        if on_notice is not None:
            on_notice(
                "write_conflict",
                f"the optimizer's update cannot be held back until it is checked "
                f"({conflict}): it is written as it comes, so a NaN it makes from finite "
                "gradients is found after it is written, and its update norms are not "
                "recorded",
            )
        updates, bad_update = tf.cond(open_gate, update_as_it_comes, skip)
    with tf.control_dependencies([updates]):
        weights, bad_weight = _checked_weights(variables, step, first_bad)

    def record_hit() -> Any:
        # A variable found bad at a step whose loss or gradients failed (the gate was
        # shut: it is as the steps before left it) was written by an earlier update,
        # which the hit names (but at step 0 nothing in this watch wrote it). A change
        # the held update found bad was not written: the hit is this step's.
        earlier = tf.logical_and(first_bad >= 0, step > 0)
        by_variable = tf.logical_and(bad_weight >= 0, tf.logical_or(first_bad < 0, step > 0))
        column = tf.where(
            by_variable,
            bad_weight + 1 + len(variables),
            tf.where(first_bad >= 0, first_bad, bad_update + 1 + 2 * len(variables)),
        )
        at = tf.where(tf.logical_and(by_variable, earlier), step - 1, step)
        where = tf.constant(0, tf.int64) if replica is None else replica
        hit = tf.stack([at, tf.constant(site.site_id, tf.int64), column, where])
        flags.state.assign(tf.where(no_hit_yet, hit, state))
        return tf.constant(True)

    worst = tf.reduce_max(tf.stack([first_bad, bad_weight, bad_update]))
    noted = tf.cond(worst >= 0, record_hit, lambda: tf.constant(False))
    parts = [norms, weights, updates]
    if site.loss_scale is not None:
        parts.append(tf.stack([tf.cast(value_of(site.loss_scale), tf.float32), 0.0]))
    row_write = _write_row(site, step, tf.concat(parts, 0))
    # The count moves after the flag and the row are written: a reader that sees S steps
    # and then no flag knows steps before S passed (`KeptCalls.fine_before`).
    with tf.control_dependencies([noted, row_write]):
        site.steps.assign_add(1)


def _checked_weights(variables: list[Any], step: Any, first_bad: Any) -> tuple[Any, Any]:
    """In the graph, after the gated update: the variables' L2 norms and the first that
    is not finite (-1 when none is), as `checked_norms`, at every `WEIGHTS_EVERY`-th
    step and at a step whose loss or gradients failed; NaN norms and -1 otherwise.

    Reading every variable again costs a step as much as the check of its gradients
    (3% of the suite's MLP step, measured). The held update checks what the optimizer
    writes before it is written; this finds what it could not hold (a sparse write, a
    write from a ``cond`` of the update's own). A NaN written so into a variable the
    forward pass reads reaches the next step's loss, whose failed check then finds it
    here; a variable the forward pass does not read every step (an embedding's rows)
    is found within `WEIGHTS_EVERY` steps."""
    import tensorflow as tf

    def check() -> Any:
        return checked_norms([value_of(v) for v in variables])

    def not_due() -> Any:
        return tf.fill([len(variables)], float("nan")), tf.constant(-1, tf.int64)

    due = tf.logical_or(tf.equal(step % WEIGHTS_EVERY, 0), first_bad >= 0)
    return tf.cond(due, check, not_due)


def count_skipped_step(site: WatchSite, scale_before: Any) -> None:
    """In the step's graph, after a ``LossScaleOptimizer``'s apply: when it skipped the
    step (its scale fell below ``scale_before``), the step is counted with a row of
    its own (the scale, ``skipped`` 1, NaN norms), so that the site's steps stay the
    training's steps and a custom loop's kept calls stay in step with them."""
    import tensorflow as tf

    scale_after = tf.cast(value_of(site.loss_scale), tf.float32)
    before = tf.cast(scale_before, tf.float32)
    norms = 1 + 3 * len(site.variable_names)

    def count() -> Any:
        step = site.steps.read_value()
        row = tf.concat([tf.fill([norms], float("nan")), tf.stack([before, 1.0])], 0)
        written = _write_row(site, step, row)
        with tf.control_dependencies([written]):
            site.steps.assign_add(1)
        return tf.constant(True)

    tf.cond(scale_after < before, count, lambda: tf.constant(False))


def _write_row(site: WatchSite, step: Any, row: Any) -> Any:
    """In the graph: write ``row`` as ``step``'s row of the site's ring. A scatter
    writes the one row in place; a sliced assign (``ring[i].assign``) copied the whole
    ring every step (4,096 rows: 6.5 MB a step for 200 variables)."""
    import tensorflow as tf

    slot = tf.reshape(step % RING_STEPS, [1])
    return site.ring.scatter_update(tf.IndexedSlices(tf.reshape(row, [1, -1]), slot))


def _dense(gradient: Any) -> Any:
    """A gradient's values (an Embedding's ``IndexedSlices`` has only its rows)."""
    return getattr(gradient, "values", gradient)


def variable_name(variable: Any) -> str:
    """A variable's name as the program knows it (Keras' path, or TensorFlow's name)."""
    return str(getattr(variable, "path", None) or getattr(variable, "name", "variable"))
