"""A pool of worker processes with a time limit per job, shared by the fuzzers
(``eqiforge.fuzz``, ``eqiforge.fuzz_torch``).

    for outcome in worker_pool.run(jobs, work, args, workers=2, timeout_s=60, init=setup):
        ...

Each worker is a spawned process that calls ``init()`` once (to set the
environment and import what every job needs) and then ``work(job, *args)``
for each job it is given. ``run`` yields an ``Outcome`` for every job as it
finishes (not in the jobs' order; jobs are handed out in order). A worker
whose job raises stays alive; one that dies (a signal, ``os._exit``) or runs
past ``timeout_s`` on one job (it is killed) is replaced by a fresh process
for the jobs still waiting. ``work``, ``init``, ``args``, the jobs and what
``work`` returns travel between processes, so they must be picklable
(module-level functions, plain values).

Every job ends as one ``Outcome.kind``:

    done     ``work`` returned; ``value`` is what it returned
    raised   ``work`` raised; ``detail`` is the exception (its last line, as
             ``traceback.format_exception_only`` writes it)
    died     the worker process ended during the job; ``detail`` says how:
             ``worker process died (killed by signal 9)``, ``... (exit 3)``
    timeout  the job ran past ``timeout_s`` (killed, or finished too late);
             ``detail``: ``ran past 60 s``

``seconds`` is the job's wall time as the pool measured it (from the moment it
was handed to a worker).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import time
import traceback
from dataclasses import dataclass

KINDS = ("done", "raised", "died", "timeout")


@dataclass
class Outcome:
    job: object
    kind: str                 # one of KINDS
    value: object = None      # what work returned (kind "done")
    detail: str = ""          # why not (the other kinds)
    seconds: float = 0.0


def _serve(conn, init, work, args) -> None:
    if init is not None:
        init()
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        try:
            reply = ("done", work(job, *args))
        except BaseException as e:  # noqa: BLE001 -- a bug in the job's code: reported as its outcome
            reply = ("raised", "".join(traceback.format_exception_only(type(e), e)).strip())
        conn.send(reply)


class _Worker:
    """One worker process and the job it is running (None when idle)."""

    def __init__(self, ctx, init, work, args):
        self.parent, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, init, work, args), daemon=True)
        self.process.start()
        child.close()
        self.job = None
        self.busy = False
        self.started = 0.0

    def give(self, job) -> None:
        self.job, self.busy, self.started = job, True, time.monotonic()
        self.parent.send(job)

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.parent.send(None)
            except (BrokenPipeError, OSError):
                pass
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.parent.close()


def _death(process) -> str:
    code = process.exitcode
    why = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
    return f"worker process died ({why})"


def run(jobs, work, args=(), *, workers: int = 1, timeout_s: float, init=None, poll_s: float = 1.0):
    """Runs ``work(job, *args)`` for every job in ``workers`` spawned processes
    (at most one a job) and yields an Outcome for each as it finishes. Closing
    the generator stops the workers (those still running a job are killed
    after 5 s)."""
    ctx = multiprocessing.get_context("spawn")
    pending = list(jobs)
    pending.reverse()
    pool = [_Worker(ctx, init, work, args) for _ in range(min(max(1, workers), len(pending)))]
    try:
        while pending or any(w.busy for w in pool):
            for w in pool:
                if not w.busy and pending:
                    w.give(pending.pop())
            busy = [w for w in pool if w.busy]
            # Wake at the first deadline, so a limit shorter than poll_s holds.
            first_deadline = min(w.started + timeout_s for w in busy)
            wait_s = max(0.0, min(poll_s, first_deadline - time.monotonic()))
            ready = multiprocessing.connection.wait([w.parent for w in busy] + [w.process.sentinel for w in busy],
                                                    timeout=wait_s)
            for i, w in enumerate(pool):
                if not w.busy:
                    continue
                outcome = None
                if w.parent in ready:
                    try:
                        kind, payload = w.parent.recv()
                    except (EOFError, OSError):
                        pass
                    else:
                        outcome = Outcome(w.job, kind, payload if kind == "done" else None,
                                          payload if kind != "done" else "")
                        if time.monotonic() - w.started > timeout_s:
                            # Finished, but past the limit: the limit is what the
                            # caller asked for, whatever the job's result.
                            outcome = Outcome(w.job, "timeout", detail=f"ran past {timeout_s:g} s")
                if outcome is None and not w.process.is_alive():
                    outcome = Outcome(w.job, "died", detail=_death(w.process))
                    w.process.join()
                    w.parent.close()
                elif outcome is None and time.monotonic() - w.started > timeout_s:
                    w.stop(kill=True)
                    outcome = Outcome(w.job, "timeout", detail=f"ran past {timeout_s:g} s")
                if outcome is None:
                    continue
                outcome.seconds = time.monotonic() - w.started
                w.job, w.busy = None, False
                if outcome.kind in ("died", "timeout"):
                    pool[i] = _Worker(ctx, init, work, args) if pending else None
                yield outcome
            pool = [w for w in pool if w is not None]
    finally:
        for w in pool:
            if w is not None:
                w.stop()
