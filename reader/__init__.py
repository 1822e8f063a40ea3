"""Read tfdbg-tui dumps without TensorFlow."""
