"""Sets TensorFlow's threads and logical devices before anything runs, as programs on
GPU machines do (`set_memory_growth`), which TensorFlow refuses once its runtime is up;
then a tf.function takes log(0).

    run_configures_runtime.py
"""

import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(2)
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


@tf.function
def step(x):
    return tf.math.log(x) * 2.0  # LOG


step(tf.constant([0.0, 1.0]))
print("CONFIGURED", len(tf.config.list_logical_devices("CPU")), flush=True)
