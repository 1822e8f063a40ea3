"""TensorFlow's own dumps (`tf.debugging.experimental.enable_dump_debug_info`), read
without TensorFlow into the same indexes as ours: see docs/tf_dumps.md."""
