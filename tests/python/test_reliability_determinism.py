"""Determinism: the same program and options give the same candidates, the
same emitted Triton code (byte for byte), the same chosen candidate and
launch parameters and the same outputs, across runs (separate processes,
each with its own hash seed) and across thread counts (torch.set_num_threads
and OMP_NUM_THREADS); and `eqiforge-opt extract --json` prints the same
object on every run but for its timing fields.

The C++ search is single-threaded; PyTorch, NumPy's BLAS (which Triton's
interpreter calls for tl.dot) and the Python layer are where threads and hash
seeds could leak in.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eqiforge.runtime import search

pytestmark = [
    pytest.mark.skipif(not search.has_extraction(), reason="extraction (eqiforge-opt extract) is not in this build"),
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
]

REPO = Path(__file__).resolve().parents[2]

# Optimizes two small programs with the cache off and prints, for each: every
# candidate extraction ranked (its program and emitted module), the chosen
# candidate, its launch parameters and its outputs on fixed inputs (as hex
# bytes, so equality is bitwise).
WORKER = textwrap.dedent("""
    import json, os, sys, warnings
    import torch
    import torch.nn.functional as F
    import eqiforge.api as api
    from eqiforge.options import make_options
    from eqiforge.runtime import search

    warnings.simplefilter("ignore", api.InterpreterWarning)
    torch.set_num_threads(int(sys.argv[1]))
    LIMITS = dict(top_k=3, search_time_s=30, extract_time_s=60)

    def relu_matmul(x, w):
        return torch.relu(x @ w)

    def rms_norm(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g

    def inputs(name, seed):
        gen = torch.Generator().manual_seed(seed)
        if name == "relu_matmul":
            return torch.randn(5, 7, generator=gen), torch.randn(7, 6, generator=gen)
        return torch.randn(6, 16, generator=gen), torch.randn(16, generator=gen)

    out = {"threads": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS")}
    for name, fn in (("relu_matmul", relu_matmul), ("rms_norm", rms_norm)):
        from eqiforge.frontend import to_ir
        text = to_ir(fn, *inputs(name, 0)).text
        found = search.find_candidates(text, make_options(**LIMITS), "h200")
        cands = [{"program": c.program, "source": search.emit_module(c.program, file=f"<candidate {c.rank}>"),
                  "estimate_s": c.estimate_s, "blocks": c.blocks} for c in found.candidates]
        fast = api.optimize(fn, *inputs(name, 0), cache=False, **LIMITS)
        y = fast(*inputs(name, 1))
        out[name] = {"ir": text, "candidates": cands, "chosen": fast.report.candidate_rank,
                     "source": fast.source, "params": fast.params,
                     "output": y.contiguous().numpy().tobytes().hex()}
    print(json.dumps(out))
""")


def run_workers(tmp_path, configs):
    procs = []
    for i, (threads, omp) in enumerate(configs):
        env = {**os.environ, "OMP_NUM_THREADS": str(omp), "TRITON_INTERPRET": "1"}
        env.pop("PYTHONHASHSEED", None)  # each process draws its own
        with open(tmp_path / f"{i}.out", "w") as out, open(tmp_path / f"{i}.err", "w") as err:
            procs.append(subprocess.Popen([sys.executable, "-c", WORKER, str(threads)], stdout=out, stderr=err,
                                          env=env, cwd=tmp_path))
    results = []
    for i, p in enumerate(procs):
        assert p.wait(timeout=600) == 0, (tmp_path / f"{i}.err").read_text()[-3000:]
        results.append(json.loads((tmp_path / f"{i}.out").read_text().strip().splitlines()[-1]))
    return results


def test_optimize_is_deterministic_across_runs_and_thread_counts(tmp_path):
    configs = [(1, 1), (1, 1), (2, 2), (4, 4)]
    results = run_workers(tmp_path, configs)
    for r, (threads, omp) in zip(results, configs):
        assert r["threads"] == threads and r["omp"] == str(omp)
    first = results[0]
    for name in ("relu_matmul", "rms_norm"):
        assert len(first[name]["candidates"]) >= 2, f"{name}: too few candidates to compare"
        # The chosen module is one of the candidates' modules, unchanged.
        assert first[name]["source"] in [c["source"] for c in first[name]["candidates"]]
        for r, config in zip(results[1:], configs[1:]):
            mine, theirs = first[name], r[name]
            assert theirs["ir"] == mine["ir"], (name, config)
            assert len(theirs["candidates"]) == len(mine["candidates"]), (name, config)
            for k, (a, b) in enumerate(zip(mine["candidates"], theirs["candidates"])):
                assert b["program"] == a["program"], f"{name}: candidate {k + 1} differs with threads/OMP {config}"
                assert b["source"] == a["source"], f"{name}: candidate {k + 1}'s module differs with {config}"
                assert b["estimate_s"] == a["estimate_s"] and b["blocks"] == a["blocks"], (name, k, config)
            assert theirs["chosen"] == mine["chosen"] and theirs["params"] == mine["params"], (name, config)
            assert theirs["source"] == mine["source"], (name, config)
            assert theirs["output"] == mine["output"], f"{name}: outputs differ bitwise with threads/OMP {config}"


# Timing fields of `extract --json`: everything else must repeat exactly.
TIMING = {"seconds", "enumerate_seconds", "build_seconds", "estimate_seconds", "rank_seconds", "saturation_seconds"}


def without_timing(obj):
    if isinstance(obj, dict):
        return {k: without_timing(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [without_timing(v) for v in obj]
    return obj


@pytest.mark.parametrize("program, extra", [
    ("examples/matmul/naive.eqf", []),
    ("examples/layernorm/naive.eqf", []),
    ("examples/attention_decode/naive.eqf", []),
    # Stopped by the memory cap: the e-graph it stops at is the same too.
    ("examples/workloads/rmsnorm_swiglu.eqf", ["--memory-limit", "1"]),
])
def test_extract_json_is_identical_across_runs(program, extra):
    path, _ = search._cli_verbs()
    args = [path, "extract", str(REPO / program), "--json", "--programs", "--top", "8", *extra]
    outs = []
    for _ in range(2):
        r = subprocess.run(args, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(json.loads(r.stdout))
    assert len(outs[0]["candidates"]) >= 2
    assert without_timing(outs[0]) == without_timing(outs[1])
    if extra:
        assert outs[0]["egraph"]["stop"] == "memory-limit"
    else:
        assert outs[0]["egraph"]["stop"] == "saturated"
