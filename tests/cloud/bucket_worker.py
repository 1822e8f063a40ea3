"""One worker of a synthetic multi-worker job writing its run into a bucket.

Usage: python bucket_worker.py LOGDIR INDEX STEPS NAN_STEP INTERVAL_S
Writes STEPS steps (a NaN at step NAN_STEP; -1: none), INTERVAL_S apart, with the
writer's own background flush, printing "STEP n" after each; closes the run at the end.
"""

import sys
import time

sys.path.insert(0, sys.path[0] + "/../..")  # the repository, for `tests.synthetic`

from tests.synthetic import FINITE, NAN, add_step, make_run  # noqa: E402

LOGDIR, INDEX, STEPS, NAN_STEP, INTERVAL = (
    sys.argv[1],
    int(sys.argv[2]),
    int(sys.argv[3]),
    int(sys.argv[4]),
    float(sys.argv[5]),
)
CLUSTER = "0123456789ab"

run = make_run(
    LOGDIR, task={"type": "worker", "index": INDEX, "cluster": CLUSTER}, flush_interval_s=0.5
)
print("RUN", run.path, flush=True)
for step in range(STEPS):
    add_step(run, [FINITE, NAN if step >= NAN_STEP >= 0 else FINITE])
    print("STEP", step, flush=True)
    time.sleep(INTERVAL)
run.writer.close()
print("DONE", flush=True)
