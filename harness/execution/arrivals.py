"""Finished Dask futures and their results, fetched in the caller's thread.

A distributed.as_completed(with_results=True) fetches each result in the client's background
loop; when the scheduler dies mid-fetch that fetch never ends and its future waits forever.
Here the results of the futures that are ready are fetched together by one `fetch_results`
call, which watches the cluster while it waits (`idle`), so a lost scheduler or a cluster
without workers ends the wait with ClusterLost, in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harness.execution.cluster import fetch_results


def arrivals(client, done, idle: Callable[[], None], poll: float = 0.1
             ) -> Iterator[tuple[Any, Any]]:
    """(future, result) pairs of a distributed.as_completed (with_results=False) as they
    finish, the results of the finished ones fetched together here (fetch_results: a result
    lost on its way is NOT_RECEIVED; nothing is fetched in the background, where a failed
    fetch would leave its future waiting forever); an errored or cancelled future comes
    with its exception. `idle()` is called (about every `poll` seconds) while none is ready,
    and while a fetch lasts (a result whose worker died is computed again: the fetch waits
    for a worker), and may raise to stop waiting."""
    while not done.is_empty():
        if done.has_ready():
            ready = done.next_batch(block=False)
            finished = [f for f in ready if f.status == "finished"]
            results = dict(zip(finished, fetch_results(client, finished, waiting=idle),
                               strict=True))
            for future in ready:
                yield future, (results[future] if future in results else settled(future))
            continue
        idle()
        with done.thread_condition:
            done.thread_condition.wait(poll)


def settled(future) -> BaseException | None:
    """The exception an errored or cancelled future ended with (known here: no round trip);
    a cancelled one's says why (its `reason`, e.g. scheduler-connection-lost)."""
    try:
        future.result(timeout=60)
    except BaseException as exc:  # noqa: BLE001 - what it ended with, whatever it is
        return exc
    return None
