"""The dump writer, free of TensorFlow: segment files, columnar chunks, value encoding, the
flight recorder's window, and stopping the recording when a write fails. Imports numpy,
msgpack and `reader`'s format, never TensorFlow.
"""
