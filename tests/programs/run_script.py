"""A plain script for `tfdbg-tui run`: arguments, a data file read relative to the
working directory, a log(0) (eager, or in a tf.function with ``--function``), then an
exit status, a crash or a wait for Ctrl+C.

    run_script.py --data data/values.txt [--function] [--exit N | --crash | --wait]
"""

import argparse
import json
import os
import sys
import time

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
parser.add_argument("--exit", type=int, default=0)
parser.add_argument("--crash", action="store_true")
parser.add_argument("--wait", action="store_true")
parser.add_argument("--function", action="store_true")
args = parser.parse_args()


@tf.function
def log_of(x):
    return tf.math.log(x * 1.0)  # FUNCTION_LOG_LINE


with open(args.data) as data:
    values = tf.constant([float(v) for v in data.read().split()])
if args.function:
    logs = log_of(values)  # FUNCTION_CALL_LINE
else:
    logs = tf.math.log(values)  # LOG_LINE
print(
    json.dumps(
        {
            "argv": sys.argv,
            "name": __name__,
            "cwd": os.getcwd(),
            "path0": sys.path[0],
            "logs": [float(v) for v in logs],
        }
    ),
    flush=True,
)
if args.crash:
    raise RuntimeError("the program's own error")
if args.wait:
    print("waiting for Ctrl+C", flush=True)
    while True:
        values = values + 1.0
        time.sleep(0.05)
sys.exit(args.exit)
