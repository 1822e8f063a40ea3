"""Synthetic multi-worker jobs (no TensorFlow): many workers' runs in one logdir, as a
job of `tf.distribute.MultiWorkerMirroredStrategy` writes them.

`write_job` writes one run per worker with `DumpWriter` (this tree's writer, into a
local directory or a bucket's URL), shaped as `tests.synthetic.write_big_dump`'s runs
(FULL_HEALTH, rows that vary as real runs' do) and as tests/programs/multi_worker.py's
job: each step one call of ``train_step``, whose graph traces a forward pass (``dense``
layers), a `Log` loss, its gradients, an all-reduce of them
(``CollectiveReduceV2``) and the updates. The origin worker's `Log` makes a -inf at
its step ``nan_step``, and NaN follows from it; every other worker reaches that step
later (its calls run a little after the origin's) and receives the NaN through the
all-reduce, at that step or the next (`JobShape.late_every`); a few workers end
before it, healthy (`JobShape.healthy_every`). Every run carries its task and the
job's cluster id in its `run` record (docs/format.md).
"""

from __future__ import annotations

import concurrent.futures
import os
from dataclasses import dataclass, replace

import numpy as np

from instrument.dump.writer import DumpWriter
from reader import format as fmt
from reader import storage
from reader.contract import RunRecord, TaskMap

CLUSTER = "5eedc1a55e5e"
FLOAT32 = 1  # TF's DataType enum
USER_FILE = "/home/user/project/train_job.py"
USER_SOURCE = [
    "import tensorflow as tf",
    "",
    "",
    "@tf.function",
    "def train_step(x):",
    "    def replica_step(x):",
    "        probs = model(x)",
    "        loss = -tf.reduce_mean(tf.math.log(probs))  # LOG_LINE",
    "        grads = tape.gradient(loss, model.trainable_variables)",
    "        grads = replica_context.all_reduce('sum', grads)",
    "        optimizer.apply_gradients(zip(grads, model.trainable_variables))",
    "    return strategy.run(replica_step, args=(x,))",
]
LOG_LINE = 8
LOG_OP = "loss/Log"
ALL_REDUCE_OP = "allreduce/CollectiveReduceV2"
# The step function's runtime name (`reader.format.step_function_name`: train_step).
STEP_FUNCTION = "__inference_train_step_42"
# When the job's first step ran (Unix time): the runs' times are fixed, so a job
# written twice ranks the same.
START_TIME = 1_780_000_000.0


@dataclass(frozen=True)
class JobShape:
    """What `write_job` writes.

    Attributes:
        workers: Runs in the logdir, one per worker task.
        traces: Graph traces of each run that reaches the end.
        traces_per_step: Traces of one call (one per op of the step's graph).
        origin: The worker whose `Log` goes -inf first.
        nan_step: The step it does so at.
        late_every: Every such other worker receives the NaN a step later.
        healthy_every: Every such worker (not the origin) ends before ``nan_step``.
        step_s: Seconds between two steps of a worker.
        worker_lag_s: How much later each worker's calls run than the one before it.
        origin_lead_s: How much earlier than worker 0's the origin's calls run.
        finished: Whether the runs end cleanly (an `end` record).
        mask: Whether every step's graph has an attention mask, a -inf that does no
            harm (`mask/Const` carried by `mask/Select` into a finite Softmax): every
            run's first non-finite value is then at step 0, contained.
    """

    workers: int = 256
    traces: int = 100_000
    traces_per_step: int = 500
    origin: int = 37
    nan_step: int = 120
    late_every: int = 5
    healthy_every: int = 32
    step_s: float = 0.25
    worker_lag_s: float = 0.0005
    origin_lead_s: float = 0.01
    finished: bool = True
    mask: bool = False

    @property
    def steps(self) -> int:
        return max(self.traces // self.traces_per_step, 1)

    def healthy(self, worker: int) -> bool:
        return worker != self.origin and self.healthy_every > 0 and worker % self.healthy_every == 1

    def nan_step_of(self, worker: int) -> int | None:
        """The step ``worker`` first holds a NaN or infinity at; None: never."""
        if self.healthy(worker) or self.nan_step >= self.steps:
            return None
        if worker == self.origin:
            return self.nan_step
        late = self.late_every > 0 and worker % self.late_every == 0
        return min(self.nan_step + (1 if late else 0), self.steps - 1)

    def steps_of(self, worker: int) -> int:
        """How many steps ``worker``'s run holds."""
        return min(max(self.nan_step - 10, 1), self.steps) if self.healthy(worker) else self.steps

    def time_of(self, worker: int, step: int) -> float:
        lead = self.origin_lead_s if worker == self.origin else -self.worker_lag_s * worker
        return START_TIME + step * self.step_s - lead


def task_of(worker: int) -> dict:
    return {TaskMap.TYPE: "worker", TaskMap.INDEX: worker, TaskMap.CLUSTER: CLUSTER}


def run_id_of(worker: int) -> str:
    """Worker ``worker``'s run id: its start time (the job's), host and pid."""
    return f"20260601T000000-worker{worker:03d}-{1000 + worker}-{worker:06x}"


class WorkerWriter:
    """One worker's run, written step by step (`write_step`) as its writer would.

    Args:
        logdir: The job's logdir (a directory or a bucket's URL).
        worker: The worker's task index.
        shape: The job.
        flush_interval_s: The writer's background flush (None: `write_step` flushes
            every ``flush_every`` steps, and `close` at the end).
    """

    def __init__(
        self, logdir: str, worker: int, shape: JobShape, flush_interval_s: float | None = None
    ) -> None:
        self.shape = shape
        self.worker = worker
        self.writer = writer = DumpWriter(
            logdir,
            {
                RunRecord.RUN: run_id_of(worker),
                RunRecord.TENSOR_DEBUG_MODE: fmt.FULL_HEALTH,
                RunRecord.HOST: f"worker-{worker}",
                RunRecord.PID: 1000 + worker,
                RunRecord.START_TIME: shape.time_of(worker, 0) - 5.0,
                RunRecord.EAGER_MODE: True,
                RunRecord.ARGV: ["train_job.py"],
                RunRecord.TF_VERSION: "2.21.0",
                RunRecord.TASK: task_of(worker),
            },
            circular_buffer_size=-1,
            flush_interval_s=flush_interval_s,
        )
        user = writer.add_source_file(USER_FILE, USER_SOURCE, library=False)
        library = writer.add_source_file(
            "/usr/lib/python3/site-packages/tensorflow/python/ops/math_ops.py",
            None,
            library=True,
            omitted="library",
        )
        outer = writer.add_frame(user, 12, "train_step")
        library_frame = writer.add_frame(library, 120, "wrapper")
        stacks = {
            line: writer.add_stack(
                [outer, writer.add_frame(user, line, "replica_step"), library_frame]
            )
            for line in (7, 8, 9, 10, 11)
        }
        self.call_stack = writer.add_stack([outer])
        self.device = writer.add_device(f"/job:worker/replica:0/task:{worker}/device:CPU:0")
        graph = writer.add_graph("train_step", None, function_name=STEP_FUNCTION)
        ops = self.ops = _step_ops(shape.traces_per_step, shape.mask)
        for tp, (op_type, name, inputs, line) in enumerate(ops):
            writer.add_op(
                graph_id=graph,
                op_type=op_type,
                op_name=name,
                inputs=inputs,
                num_outputs=1,
                output_dtypes=[FLOAT32],
                device_id=self.device,
                stack_id=stacks[line],
                trace_points=[tp],
            )
        self.log = next(i for i, op in enumerate(ops) if op[1] == LOG_OP)
        self.all_reduce = next(i for i, op in enumerate(ops) if op[1] == ALL_REDUCE_OP)
        self._rng = np.random.default_rng(worker)
        rows = np.tile(
            np.array([FLOAT32, 2, 4096, 0, 0, 0, 1000, 96, 3000], dtype=np.float64), (len(ops), 1)
        )
        rows[:, 1] = self._rng.integers(0, 5, len(ops))
        rows[:, 2] = 2.0 ** self._rng.integers(4, 16, len(ops))
        self._op_rows = rows
        if shape.mask:
            rows[1:3, 3] = 64  # the mask's -inf, contained
        self._tps = np.arange(len(ops), dtype=np.int32)
        self.steps_written = 0
        writer.flush()

    def step_rows(self, step: int) -> np.ndarray:
        """The summary rows of step ``step``'s traces (one per op, in op order)."""
        rows = self._op_rows.copy()
        size = rows[:, 2]
        rows[:, 6] = np.floor(self._rng.random(len(rows)) * size)
        rows[:, 7] = np.floor(self._rng.random(len(rows)) * (size - rows[:, 6]) * 0.1)
        rows[:, 8] = size - rows[:, 6] - rows[:, 7]
        first = self.shape.nan_step_of(self.worker)
        if first is None or step < first:
            return rows
        if step > first:
            bad = np.arange(len(rows))  # the weights are NaN: everything is
        elif self.worker == self.shape.origin:
            rows[self.log, 3] = 1  # one -inf, then NaN from the loss on
            rows[self.log, 6:9] = [0, 0, rows[self.log, 2] - 1]
            bad = np.arange(self.log + 1, len(rows))
        else:
            bad = np.arange(self.all_reduce, len(rows))  # received through the all-reduce
        rows[bad, 3:5] = 0
        rows[bad, 5] = rows[bad, 2]
        rows[bad, 6:9] = 0
        return rows

    def write_step(self, flush_every: int = 0) -> None:
        """The next step: its call, then the traces that ran in it."""
        step = self.steps_written
        rows = self.step_rows(step)
        w = self.writer
        call = w.add_execution(
            op_type=STEP_FUNCTION,
            graph_id=None,
            input_ids=[2 * step],
            output_ids=[2 * step + 1],
            device_ids=[self.device],
            output_dtypes=[FLOAT32],
            stack_id=self.call_stack,
            summaries=[rows[-1]],
            time_s=self.shape.time_of(self.worker, step),
            call_ordinal=step,
        )
        w.add_traces(self._tps, summaries=rows, step=call)
        self.steps_written = step + 1
        if flush_every and self.steps_written % flush_every == 0:
            w.flush()

    def close(self) -> None:
        if self.shape.finished:
            self.writer.close()
        else:
            self.writer.flush()


def _step_ops(count: int, mask: bool = False) -> list[tuple[str, str, list[str], int]]:
    """The ops of the step's graph, one trace each: (type, name, inputs, creation line).
    A forward pass (behind an attention mask, with ``mask``), the loss's `Log`
    (`LOG_OP`), its gradients, the all-reduce of the last (`ALL_REDUCE_OP`) and the
    updates, each fed by the op before it."""
    count = max(count, 8)
    forward, backward = count * 2 // 5, count * 4 // 5
    ops: list[tuple[str, str, list[str], int]] = [("Placeholder", "x", [], 7)]
    if mask:
        ops += [
            ("Const", "mask/Const", [], 7),
            ("SelectV2", "mask/Select", ["x:0", "mask/Const:0", "x:0"], 7),
            ("Softmax", "attention/Softmax", ["mask/Select:0"], 7),
        ]
    for i in range(len(ops), count):
        if i < forward:
            op = ("MatMul" if i % 2 else "Relu", f"dense_{i}/op", 7)
        elif i == forward:
            op = ("Log", LOG_OP, 8)
        elif i < backward:
            # The gradient of forward op dense_j (`gradient_tape/<forward op>/...`).
            j = max(1, 2 * forward - i)
            op_type = "MatMul" if i % 2 else "ReluGrad"
            op = (op_type, f"gradient_tape/dense_{j}/op/{op_type}", 9)
        elif i == backward:
            op = ("CollectiveReduceV2", ALL_REDUCE_OP, 10)
        else:
            op = ("Sub", f"update_{i}/sub", 11)
        ops.append((op[0], op[1], [f"{ops[-1][1]}:0"], op[2]))
    return ops


def write_worker(logdir: str, worker: int, shape: JobShape) -> str:
    """Write worker ``worker``'s whole run; returns its path."""
    run = WorkerWriter(logdir, worker, shape)
    for _ in range(shape.steps_of(worker)):
        run.write_step(flush_every=50)
    run.close()
    return run.writer.path


def _write_workers(logdir: str, workers: list[int], shape: JobShape) -> None:
    for worker in workers:
        write_worker(logdir, worker, shape)


def write_job(logdir: str | os.PathLike[str], shape: JobShape = JobShape(), processes: int = 1):
    """Write every worker's run of ``shape`` into ``logdir``, in ``processes``
    processes; returns the logdir (a string: a path or a URL)."""
    logdir = os.fspath(logdir)
    if not storage.is_url(logdir):
        os.makedirs(logdir, exist_ok=True)
    workers = list(range(shape.workers))
    if processes <= 1:
        _write_workers(logdir, workers, shape)
        return logdir
    with concurrent.futures.ProcessPoolExecutor(processes) as pool:
        for done in [
            pool.submit(_write_workers, logdir, workers[i::processes], shape)
            for i in range(processes)
        ]:
            done.result()
    return logdir


def small_job(**changes) -> JobShape:
    """A job small enough for a test: 8 workers of 2,000 traces (or ``changes``)."""
    return replace(
        JobShape(
            workers=8,
            traces=2_000,
            traces_per_step=40,
            origin=5,
            nan_step=20,
            late_every=3,
            healthy_every=4,
        ),
        **changes,
    )
