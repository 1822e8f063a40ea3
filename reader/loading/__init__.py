"""Reading a run's files into the indexes: our segment files (`run_loader`) and
TensorFlow's own dumps (`tf_events`).
"""
