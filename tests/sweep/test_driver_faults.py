"""A sweep under cluster faults, against real Dask processes: no worker (from the start, or all
of them gone mid-sweep), a frozen worker, a lost scheduler; and the exit status of `sweep`.

The jobs are a method from a file that sleeps budget / 10 s (no CPU: their length does not
depend on the machine's load) and leaves a mark (its worker's pid) when it starts."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from sweep_helpers import (
    DaskProcesses,
    error_lines,
    job_log,
    slow_sweep,
    statuses,
    stored_jobs,
    wait_for,
)

from harness.cli.main import main
from harness.core.errors import InputError
from harness.execution.store import ResultStore
from harness.sweep.plan import plan
from harness.sweep.spec import load_sweep, parse_sweep


@pytest.fixture
def zero_workers(tmp_path):
    """A scheduler without workers (add_worker gives it some)."""
    cluster = DaskProcesses(tmp_path / "dask", n_workers=0)
    try:
        yield cluster.start()
    finally:
        cluster.close()


# ---- 1. no workers ---------------------------------------------------------------------------
def test_no_workers_from_the_start_gives_up_then_resumes(zero_workers, tmp_path, capsys):
    sweep_file = slow_sweep(tmp_path, "[1]", 4, extra="no_workers_timeout = 2")
    store = tmp_path / "s.sqlite"
    args = ["sweep", str(sweep_file), "--scheduler", zero_workers.address, "--store", str(store),
            "--no-report"]
    start = time.monotonic()
    assert main(args) == 3
    assert time.monotonic() - start < 60
    out, err = capsys.readouterr()
    assert "0 workers connected" in out
    assert "waiting for workers: none for" in err            # the progress line said it
    assert "Traceback" not in err
    lines = error_lines(err)
    assert lines == [
        f"error: no workers: scheduler {zero_workers.address} has had none for 2s "
        f"(no_workers_timeout); start workers for it (dask worker {zero_workers.address} "
        f"--nthreads 1), then run the same command to finish the other 4 jobs (none was done)"]
    assert err.rstrip().endswith(lines[0])                   # the last word
    # the command line's option overrides the file's (and the store opens as before)
    start = time.monotonic()
    assert main([*args, "--no-workers-timeout", "1"]) == 3
    assert "has had none for 1s" in capsys.readouterr().err
    assert time.monotonic() - start < 60
    # with a worker, the same command finishes the sweep
    zero_workers.add_worker(0)
    zero_workers.wait_for_workers(1)
    assert main(args) == 0
    assert set(job_log(store).values()) == {1} and statuses(store) == {"ok": 4}


def test_workers_gone_mid_sweep_keeps_every_finished_job(tmp_path, sweep_process):
    cluster = DaskProcesses(tmp_path / "dask", n_workers=1).start()
    try:
        sweep_file = slow_sweep(tmp_path, "[1, 2]", 6)
        store = tmp_path / "s.sqlite"
        common = ["--scheduler", cluster.address, "--store", str(store), "--no-report"]
        client = sweep_process(str(sweep_file), *common, "--no-workers-timeout", "2")
        wait_for(lambda: stored_jobs(store) >= 2 or client.poll() is not None, 120,
                 "the first results")
        cluster.workers[0].send_signal(signal.SIGKILL)
        cluster.workers[0].wait(30)
        assert client.wait(90) == 3
        log = (tmp_path / "sweep.log").read_text()
        assert "Traceback" not in log, log
        assert "waiting for workers: none for" in log
        kept = stored_jobs(store)
        assert 2 <= kept < 12
        assert error_lines(log)[-1].endswith(
            f"to finish the other {12 - kept} jobs (the {kept} done are stored)"), log
        assert set(job_log(store).values()) == {1}
        # a worker again: the rerun runs only what is missing
        cluster.add_worker(1)
        cluster.wait_for_workers(1)
        assert main(["sweep", str(sweep_file), *common]) == 0
        counts = job_log(store)
        assert len(counts) == 12 and set(counts.values()) == {1}
    finally:
        cluster.close()


def test_sweep_file_timeouts_are_checked():
    base = 'problems = ["onefactor:n=5"]\n[methods.sov]\nbudgets = [100]\n'
    sweep = parse_sweep(f"no_workers_timeout = 30\nworker_ttl = 7.5\n{base}", "t.toml")
    assert (sweep.no_workers_timeout, sweep.worker_ttl) == (30.0, 7.5)
    assert parse_sweep(base, "t.toml").no_workers_timeout is None
    for key in ("no_workers_timeout", "worker_ttl"):
        for bad in ("0", "-1", "inf", "nan", '"5m"', "true"):
            with pytest.raises(InputError) as info:
                parse_sweep(f"{key} = {bad}\n{base}", "t.toml")
            assert str(info.value).startswith(f"t.toml: {key}: must be a positive number of "
                                              f"seconds"), str(info.value)


@pytest.mark.parametrize("bad", ["0", "-3", "inf", "five"])
def test_no_workers_timeout_option_is_checked(tmp_path, capsys, bad):
    sweep_file = slow_sweep(tmp_path, "[1]", 1)
    assert main(["sweep", str(sweep_file), "--check", f"--no-workers-timeout={bad}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --no-workers-timeout: must be a positive number of seconds, got "
                   f"{bad!r} (e.g. --no-workers-timeout 300)")


# ---- 2. a frozen worker ----------------------------------------------------------------------
def test_the_local_clusters_worker_ttl():
    import dask
    import distributed  # noqa: F401 - its config defaults must exist before config.set

    from harness.execution.cluster import WORKER_TTL, local_worker_ttl

    assert WORKER_TTL == 120.0
    assert local_worker_ttl() == WORKER_TTL           # Dask's default (5 minutes) is replaced
    assert local_worker_ttl(7.5) == 7.5               # the sweep file's worker_ttl
    with dask.config.set({"distributed.scheduler.worker-ttl": "45s"}):
        assert local_worker_ttl() == 45.0             # a value configured for Dask is kept
        assert local_worker_ttl(7.5) == 7.5


@pytest.mark.slow   # ~20 s after a local cluster's start-up (30 s on a loaded machine)
def test_a_frozen_worker_loses_its_job_within_two_ttls(tmp_path, sweep_process, monkeypatch):
    """A local cluster of 2 worker processes with worker_ttl = 3 s (Dask's floor for a small
    cluster is 5 s: 10 heartbeats of 0.5 s): one worker is stopped (SIGSTOP) while it runs a
    job; the scheduler's nanny restarts it and its job runs elsewhere, so the sweep finishes
    within 2 x 5 s + a restart + the remaining jobs, instead of Dask's 5 minutes or more."""
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("GPC_TEST_MARKS", str(marks))     # the sweep's workers inherit it
    sweep_file = slow_sweep(tmp_path, "[20]", 6, extra="worker_ttl = 3")
    store = tmp_path / "s.sqlite"
    client = sweep_process(str(sweep_file), "--workers", "2", "--store", str(store),
                           "--no-report")

    wait_for(lambda: len(list(marks.iterdir())) >= 2 or client.poll() is not None, 120,
             "both workers to start a job")
    # the worker that started a job last: its 2 s job runs now
    victim = int(max(marks.iterdir(), key=os.path.getmtime).name.split("-")[0])
    os.kill(victim, signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        assert client.wait(90) == 0, (tmp_path / "sweep.log").read_text()
    finally:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    took = time.monotonic() - frozen_at
    # 6 jobs of 2 s on 2 workers; the frozen job restarts after <= 2 x 5 s (+ the restart)
    assert took < 45, took
    counts = job_log(store)
    assert len(counts) == 6 and set(counts.values()) == {1}
    assert statuses(store) == {"ok": 6}
    # the frozen worker's job ran again elsewhere (the same job: the same mark, another pid)
    started = [m.name.split("-") for m in marks.iterdir()]
    assert len(started) > 6 and any(pid == str(victim) for pid, _ in started)
    assert len({job for _, job in started}) == 6
    log = (tmp_path / "sweep.log").read_text()
    assert "local cluster, 2 worker processes" in log and "worker-ttl 3s" in log, log


# ---- 3. exit status, --check, a lost scheduler --------------------------------------------
def test_exit_status_when_jobs_fail_and_the_planned_count(dask_cluster, tmp_path, capsys):
    sweep_file = slow_sweep(tmp_path, "[1, 2]", 2, settings="fail_budget = 2")
    text = sweep_file.read_text().replace('[methods."slow.py:Slow"]',
                                          '[methods.ep]\nbudgets = [100]\n'
                                          '[methods."slow.py:Slow"]')
    sweep_file.write_text(text)      # ep cannot run on an orthant problem: not planned
    sweep = load_sweep(sweep_file)
    n = len(plan(sweep))
    assert n == 4 < sweep.n_jobs
    store = tmp_path / "s.sqlite"
    args = ["sweep", str(sweep_file), "--scheduler", dask_cluster.address, "--store", str(store),
            "--no-report"]
    assert main([*args, "--check"]) == 0
    assert f"0 done, {n} to run (no store there yet)" in capsys.readouterr().out
    assert main(args) == 0                     # 2 jobs stored as error: done all the same
    out = capsys.readouterr().out
    assert f"store {store}: 4 of the sweep's 4 jobs (2 error, 2 ok)" in out
    assert "not ok: 2 error (" in out
    with ResultStore(store) as db:
        assert db.metadata()["sweeps"]["faults"]["jobs"] == n    # what runs, not the file's 5
    assert main([*args, "--strict"]) == 1      # not ok, stored by the run before: still 1
    assert main([*args, "--check"]) == 0
    assert f"{n} done, 0 to run" in capsys.readouterr().out


def _once_at(n: int, real, hit, is_async: bool = False):
    """`real`, wrapped so that its n-th call first calls hit()."""
    calls = []

    def before():
        calls.append(1)
        if len(calls) == n:
            hit()
    if is_async:
        async def wrapped(*args, **kwargs):
            before()
            return await real(*args, **kwargs)
        return wrapped

    def wrapped(*args, **kwargs):
        before()
        return real(*args, **kwargs)
    return wrapped


@pytest.mark.parametrize("point", ["before-the-workers-are-asked", "while-a-result-is-fetched",
                                   "between-results"])
def test_a_scheduler_killed_at_any_point_is_one_line_and_exit_3(tmp_path, monkeypatch, capfd,
                                                               point):
    """A real `dask scheduler` SIGKILLed at a chosen point of the sweep (the sweep runs in this
    process): detected within seconds wherever it lands, one line, exit 3, nothing stored
    twice. Before: a CommClosedError traceback and exit 2 when it died before the workers
    were asked; a CommClosedError traceback, then "no workers" after no_workers_timeout,
    when it died with a result on its way (the scheduler is stopped as it is asked for the
    result, then killed)."""
    from distributed import Client

    from harness.sweep import driver

    cluster = DaskProcesses(tmp_path / "dask", n_workers=1).start()
    killed = []

    def kill():
        os.killpg(cluster.scheduler.pid, signal.SIGKILL)
        cluster.scheduler.wait(30)
        killed.append(time.monotonic())

    def freeze_then_kill():   # the request is sent; the answer never comes: the comm closes
        os.kill(cluster.scheduler.pid, signal.SIGSTOP)
        threading.Timer(0.5, kill).start()

    try:
        sweep_file = slow_sweep(tmp_path, "[1]", 8, extra="no_workers_timeout = 20")
        store = tmp_path / "s.sqlite"
        address = cluster.address
        if point == "before-the-workers-are-asked":
            monkeypatch.setattr(driver, "worker_facts", _once_at(1, driver.worker_facts, kill))
        elif point == "while-a-result-is-fetched":
            monkeypatch.setattr(Client, "_gather_remote",
                                _once_at(2, Client._gather_remote, freeze_then_kill, True))
        else:
            monkeypatch.setattr(driver, "job_record", _once_at(2, driver.job_record, kill))
        rc = main(["sweep", str(sweep_file), "--scheduler", address, "--store", str(store),
                   "--no-report"])
        ended = time.monotonic()
        err = capfd.readouterr().err
        assert killed, "the sweep ended before the kill"
        assert rc == 3, err
        assert ended - killed[0] < 15, ended - killed[0]
        assert "Traceback" not in err and " - ERROR - " not in err, err
        kept = stored_jobs(store)
        assert error_lines(err) == [err.rstrip().splitlines()[-1]] == [
            f"error: lost the scheduler {address} (stopped, or unreachable from here); "
            f"when it runs again, run the same command to finish the other {8 - kept} jobs ("
            + (f"the {kept} done are stored)" if kept else "none was done)")]
        assert set(job_log(store).values()) <= {1}
    finally:
        cluster.close()


def test_a_call_cut_off_by_a_closed_comm_is_cluster_lost():
    """cluster.ask: a scheduler killed just before a call can fail it with CommClosedError
    while the client's status still says running (seen in CI on a loaded machine: a
    traceback instead of the one line and exit 3); that is ClusterLost, other errors are
    not."""
    import asyncio
    from types import SimpleNamespace

    from distributed.comm.core import CommClosedError

    from harness.execution.cluster import ClusterLost, ask

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    client = SimpleNamespace(status="running", loop=SimpleNamespace(asyncio_loop=loop),
                             scheduler=SimpleNamespace(address="tcp://127.0.0.1:1"))

    async def cut():
        raise CommClosedError("in <TCP (closed) ConnectionPool.identity>: Stream is closed")

    async def wrong():
        raise ValueError("a bad request")

    try:
        with pytest.raises(ClusterLost, match="tcp://127.0.0.1:1"):
            ask(client, cut)
        with pytest.raises(ValueError):
            ask(client, wrong)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


@pytest.mark.slow   # ~12 s of silence after a cluster's start
def test_a_frozen_scheduler_is_lost_after_the_comm_timeout(tmp_path, sweep_process):
    """A scheduler stopped with SIGSTOP keeps its connections open (the kernel answers for
    it): the sweep gives up once it has not answered for distributed.comm.timeouts.tcp
    (here 12 s) instead of waiting forever."""
    cluster = DaskProcesses(tmp_path / "dask", n_workers=1).start()
    try:
        sweep_file = slow_sweep(tmp_path, "[1, 2]", 6)
        store = tmp_path / "s.sqlite"
        os.environ["DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP"] = "12s"   # Dask's floor: 11 s
        try:
            client = sweep_process(str(sweep_file), "--scheduler", cluster.address, "--store",
                                   str(store), "--no-report")
        finally:
            del os.environ["DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP"]
        wait_for(lambda: stored_jobs(store) >= 2 or client.poll() is not None, 120,
                 "the first results")
        os.kill(cluster.scheduler.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        assert client.wait(60) == 3
        assert time.monotonic() - stopped < 40
        log = (tmp_path / "sweep.log").read_text()
        assert "Traceback" not in log and " - ERROR - " not in log, log
        kept = stored_jobs(store)
        assert log.rstrip().splitlines()[-1] == (
            f"error: lost the scheduler {cluster.address} (no answer for 12 s, "
            f"distributed.comm.timeouts.tcp: frozen, or unreachable from here); when it runs "
            f"again, run the same command to finish the other {12 - kept} jobs (the {kept} "
            f"done are stored)")
    finally:
        os.kill(cluster.scheduler.pid, signal.SIGKILL)
        cluster.close()


def test_the_progress_line_shows_the_wait(monkeypatch):
    import io

    from harness.sweep import progress_line as progress_module
    from harness.sweep.progress_line import Progress

    now = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    log = io.StringIO()                                   # not a terminal: lines
    p = Progress(10, log, interval=10.0)
    p.update("ok", force=True)
    p.tick()                                              # nothing new: no line
    assert log.getvalue().count("\n") == 1
    p.tick("waiting for workers: none for 0s")            # appears: a line at once
    now[0] += 3
    p.tick("waiting for workers: none for 3s")            # within the interval: none
    now[0] += 10
    p.tick("waiting for workers: none for 13s")           # every interval while it stays
    p.tick()                                              # gone: a line at once
    lines = log.getvalue().splitlines()
    assert [line.split("; ")[-1] for line in lines[1:]] == [
        "waiting for workers: none for 0s", "waiting for workers: none for 13s",
        lines[-1].split("; ")[-1]]
    assert "ETA" not in lines[1] and "waiting" not in lines[-1]
    assert lines[-1].startswith("[##......................] 1/10 done, 0 failed, 9 to run, 13s")

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    t = Progress(10, term)
    t.tick("waiting for workers: none for 0s")            # redrawn in place
    now[0] += 0.5
    t.tick("waiting for workers: none for 0s")            # < 1 s: not redrawn
    now[0] += 1
    t.tick("waiting for workers: none for 2s")            # the elapsed time stays current
    assert term.getvalue().count("\r") == 2
    assert term.getvalue().endswith("2s elapsed; waiting for workers: none for 2s\x1b[K")
