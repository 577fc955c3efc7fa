"""The fuzzers' worker pool (eqiforge.worker_pool): a job that returns, one
that raises, one that hangs past its time limit (killed, the worker
replaced), one whose worker dies; and how each fuzzer reports those."""

import multiprocessing
import os
import signal
import time

import pytest

from eqiforge import worker_pool

# The jobs run in spawned processes, which import this module to find them.


def _init():
    os.environ["POOL_TEST_INIT"] = str(int(os.environ.get("POOL_TEST_INIT", "0")) + 1)


def _work(job, offset=0):
    if job == "raise":
        raise ValueError("bad job")
    if job == "hang":
        time.sleep(120)
    if job == "exit":
        os._exit(3)
    if job == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if job == "sleep":
        time.sleep(1.0)
    return {"job": job, "value": job * 2 + offset if isinstance(job, int) else None, "pid": os.getpid(),
            "init": os.environ.get("POOL_TEST_INIT")}


def _run(jobs, **kw):
    kw.setdefault("timeout_s", 60)
    kw.setdefault("poll_s", 0.1)
    return list(worker_pool.run(jobs, _work, **kw))


def test_jobs_that_return_are_done_with_their_values():
    out = _run([1, 2, 3, 4], args=(10,), workers=2, init=_init)
    assert sorted(o.job for o in out) == [1, 2, 3, 4]
    for o in out:
        assert o.kind == "done", o
        assert o.value["value"] == o.job * 2 + 10
        assert o.value["init"] == "1"  # init ran once in each worker, before its jobs
        assert o.detail == "" and o.seconds >= 0
    pids = {o.value["pid"] for o in out}
    assert 1 <= len(pids) <= 2 and os.getpid() not in pids


def test_no_more_workers_than_jobs_and_none_for_no_jobs():
    out = _run([1, 2], workers=8)
    assert len({o.value["pid"] for o in out}) <= 2
    assert _run([], workers=2) == []


def test_a_job_that_raises_is_reported_and_its_worker_stays():
    out = _run(["raise", 5], workers=1)
    assert [o.job for o in out] == ["raise", 5]
    raised, done = out
    assert raised.kind == "raised" and raised.value is None
    assert raised.detail == "ValueError: bad job"
    assert done.kind == "done" and done.value["value"] == 10


def test_a_job_past_its_limit_is_killed_and_its_worker_replaced():
    start = time.monotonic()
    out = _run([1, "hang", 2], workers=1, timeout_s=1.5)
    assert time.monotonic() - start < 30  # not the 120 s the job sleeps
    assert [o.job for o in out] == [1, "hang", 2]
    first, hung, after = out
    assert hung.kind == "timeout" and hung.detail == "ran past 1.5 s" and hung.value is None
    assert 1.5 <= hung.seconds < 10
    assert first.kind == after.kind == "done"
    assert after.value["pid"] != first.value["pid"]  # a fresh process
    assert after.value["value"] == 4
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("job, detail", [("exit", "worker process died (exit 3)"),
                                         ("kill", f"worker process died (killed by signal {int(signal.SIGKILL)})")])
def test_a_worker_that_dies_is_reported_and_replaced(job, detail):
    out = _run([1, job, 2], workers=1, init=_init)
    assert [o.job for o in out] == [1, job, 2]
    first, died, after = out
    assert died.kind == "died" and died.detail == detail and died.value is None
    assert after.kind == "done" and after.value["pid"] != first.value["pid"]
    assert after.value["init"] == "1"  # the replacement ran init too


def test_a_hang_does_not_hold_up_the_other_workers():
    out = _run(["hang", 1, 2, 3], workers=2, timeout_s=3)
    kinds = {o.job: o.kind for o in out}
    assert kinds == {"hang": "timeout", 1: "done", 2: "done", 3: "done"}
    assert out[-1].job == "hang"  # the other jobs finished while it hung


def test_closing_the_generator_stops_the_workers():
    outcomes = worker_pool.run([1, "sleep", "sleep", 2], _work, workers=2, timeout_s=60, poll_s=0.1)
    first = next(outcomes)
    assert first.kind == "done"
    outcomes.close()
    assert not multiprocessing.active_children()


# ---- the fuzzers' reports of the outcomes -------------------------------------------------


def test_the_optimizer_fuzzer_reports_outcomes_as_results():
    fuzz = pytest.importorskip("eqiforge.fuzz")
    Outcome = worker_pool.Outcome
    done = fuzz._result(Outcome((7, True), "done", value={"seed": 7, "status": "ok", "also_tiled": True}, seconds=2.5))
    assert (done.seed, done.status, done.also_tiled, done.seconds) == (7, "ok", True, 2.5)
    hung = fuzz._result(Outcome((8, False), "timeout", detail="ran past 60 s", seconds=61.0))
    assert (hung.status, hung.stage, hung.detail, hung.also_tiled, hung.seconds) == \
        ("timeout", "run", "program ran past 60 s", False, 61.0)
    died = fuzz._result(Outcome((9, True), "died", detail="worker process died (exit 1)"))
    assert (died.status, died.stage, died.detail, died.also_tiled) == \
        ("crash", "worker", "worker process died (exit 1)", True)
    raised = fuzz._result(Outcome((10, False), "raised", detail="KeyError: 'x'"))
    assert (raised.status, raised.stage, raised.detail) == ("crash", "worker", "KeyError: 'x'")


def test_the_frontend_fuzzer_reports_outcomes_as_results():
    pytest.importorskip("torch")
    ft = pytest.importorskip("eqiforge.fuzz_torch")
    Outcome = worker_pool.Outcome
    done = ft._result(Outcome(7, "done", value={"seed": 7, "status": "rejected", "seconds": 0.0}, seconds=2.5))
    assert (done.seed, done.status, done.seconds) == (7, "rejected", 2.5)
    hung = ft._result(Outcome(8, "timeout", detail="ran past 240 s"))
    assert (hung.seed, hung.status, hung.stage, hung.detail) == (8, "timeout", "run", "program ran past 240 s")
    died = ft._result(Outcome(9, "died", detail="worker process died (killed by signal 9)"))
    assert (died.status, died.stage, died.detail) == ("crash", "worker", "worker process died (killed by signal 9)")


def test_the_optimizer_fuzzer_times_out_a_program_through_the_pool():
    # End to end: fuzz.run with a limit no program meets; the worker is
    # killed and replaced for the next seed.
    fuzz = pytest.importorskip("eqiforge.fuzz")
    import dataclasses

    config = dataclasses.replace(fuzz.MODES["ci"]["config"], program_timeout_s=0.01)
    out = {r.seed: r for r in fuzz.run([3, 4], config, jobs=1, also_tiled_odd=True)}
    assert sorted(out) == [3, 4]
    for seed, r in out.items():
        assert (r.status, r.stage, r.detail) == ("timeout", "run", "program ran past 0.01 s"), r.line()
        assert r.also_tiled == (seed % 2 == 1)
