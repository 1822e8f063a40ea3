"""`update()` off the query path: queries answer while an update reads, and see only
whole commits."""

from __future__ import annotations

import threading

from reader import DumpReader
from reader.index import trace_index as index_module
from reader.loading import run_loader as run_loader_module
from tests.synthetic import FINITE, add_step

WAIT_S = 10.0


def _in_thread(function) -> tuple[threading.Thread, list]:
    result: list = []
    thread = threading.Thread(target=lambda: result.append(function()), daemon=True)
    thread.start()
    return thread, result


def test_queries_answer_while_update_reads_and_see_whole_commits(run, monkeypatch):
    reader = DumpReader(run.path)
    monkeypatch.setattr(index_module, "COMMIT_CHUNKS", 2)
    for _ in range(10):
        add_step(run, [FINITE] * 5)
        run.writer.flush()  # a traces chunk per step

    # The update stops reading after the fifth traces chunk until the test lets it go.
    paused, resume = threading.Event(), threading.Event()
    read_new = run_loader_module.SegmentReader.read_new

    def pausing_read_new(segment):
        for taken, item in enumerate(read_new(segment)):
            if segment.stream == "graph_traces" and taken == 5:
                paused.set()
                assert resume.wait(WAIT_S)
            yield item

    monkeypatch.setattr(run_loader_module.SegmentReader, "read_new", pausing_read_new)
    updating, report = _in_thread(reader.update)
    assert paused.wait(WAIT_S)

    # Mid-read: the executions and two commits of two chunks each are in, the fifth
    # chunk is taken but not committed; queries answer at once.
    query, counts = _in_thread(
        lambda: (reader.num_executions, reader.num_traces, len(reader.traces(0, 1000)))
    )
    query.join(WAIT_S)
    assert not query.is_alive(), "a query waited for update() to finish reading"
    assert counts == [(10, 20, 20)]
    # A second update waits for the first instead of reading beside it.
    second, second_report = _in_thread(reader.update)
    second.join(0.2)
    assert second.is_alive()

    resume.set()
    updating.join(WAIT_S)
    second.join(WAIT_S)
    assert not updating.is_alive() and not second.is_alive()
    assert report[0].new_traces == 50 and report[0].new_executions == 10
    assert not second_report[0].changed
    assert (reader.num_traces, len(reader.traces(0, 1000))) == (50, 50)
