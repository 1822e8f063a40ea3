"""A small Keras fit for `tfdbg-tui run`: healthy in float32; under the
mixed_float16 policy its first Dense layer overflows float16 (300 * 20 * 16 = 96,000).

    run_keras_fit.py [--policy POLICY]   (the program sets its own dtype policy)
"""

import sys

import keras
import numpy as np

if "--policy" in sys.argv:
    keras.config.set_dtype_policy(sys.argv[sys.argv.index("--policy") + 1])
x = np.full((64, 16), 300.0, dtype="float32")
y = np.ones((64, 1), dtype="float32")
model = keras.Sequential(
    [
        keras.Input((16,)),
        keras.layers.Dense(16, kernel_initializer=keras.initializers.Constant(20.0)),
        keras.layers.Dense(1, dtype="float32"),
    ]
)
model.compile(optimizer=keras.optimizers.SGD(1e-12), loss="mse")
model.fit(x, y, batch_size=32, epochs=1, verbose=0)
print("FIT DONE", flush=True)
