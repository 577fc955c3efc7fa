"""A stand-in for eqiforge.optimize, for the benchmark runner's tests: it
lets the tests drive every path of the "ours" job (a right program, a wrong
one, a crash, a hang, a missing piece) without the real pipeline.

What it does per workload is read from $BENCH_FAKE_MODES, a JSON object
{workload name or "*": mode}; modes:
  good     the function computed in float32, cast back (right, not bitwise eager)
  wrong    the good result times 1.1
  nan      the good result with one NaN
  crash    the process exits at once with status 7 (as a segfault would end it)
  hang     sleeps for an hour
  missing  raises MissingPieceError (a piece of the pipeline is not built)
  error    raises RuntimeError
"""

from __future__ import annotations

import json
import os
import time

import torch


class MissingPieceError(RuntimeError):
    pass


class FakeReport:
    def __init__(self, name: str):
        self.name = name

    def to_json(self) -> dict:
        return {
            "program": self.name,
            "candidates": 7,
            "from_cache": False,
            "notes": ["fake optimizer"],
            "search": {"egraph": {"enodes": 1234, "eclasses": 456, "saturation_seconds": 0.5},
                       "seconds": 0.25, "states_expanded": 99, "distinct": 7},
            "tuning": {"seconds": 1.5, "candidates": 3, "configs_tried": 12},
        }


class FakeProgram:
    def __init__(self, fn, mode: str, name: str):
        self.fn, self.mode = fn, mode
        self.report = FakeReport(name)
        self.params = {"BLOCK": 64}

    def __call__(self, *args):
        out = self.fn(*[a.float() for a in args])
        outs = out if isinstance(out, tuple) else (out,)
        outs = [o.to(args[0].dtype) for o in outs]
        if self.mode == "wrong":
            outs = [o * 1.1 for o in outs]
        elif self.mode == "nan":
            outs[0].view(-1)[0] = float("nan")
        return tuple(outs) if isinstance(out, tuple) else outs[0]

    def save(self, path):
        with open(path, "w") as f:
            f.write(f"# fake kernels for {self.report.name}\n")
        return path


def optimize(fn, *example_inputs, **options):
    modes = json.loads(os.environ.get("BENCH_FAKE_MODES", "{}"))
    name = getattr(fn, "__name__", "fn")
    mode = modes.get(name, modes.get("*", "good"))
    # Options the runner passes must be there, as eqiforge.optimize takes them.
    assert {"budget_s", "search_time_s", "baselines"} <= set(options), options
    if mode == "crash":
        os._exit(7)
    if mode == "hang":
        time.sleep(3600)
    if mode == "missing":
        raise MissingPieceError("extraction is not available in this build of eqiforge: fake")
    if mode == "error":
        raise RuntimeError("fake optimizer failure")
    with torch.no_grad():
        fn(*example_inputs)
    return FakeProgram(fn, mode, name)
