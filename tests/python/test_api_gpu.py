"""eqiforge.optimize on a GPU: tuning by measurement, the report's same-run
timings (launch paths, eager, torch.compile, per kernel), the cache, CUDA
graphs. Skipped without CUDA or without the emitter.

Extraction is replaced by a stand-in offering a hand-tiled matmul (grid over
m.0 and n.0, so the tuner has block sizes to choose) behind a wrong variant.
"""

import re

import pytest
import torch

import eqiforge.api as api
from eqiforge.runtime import search
from eqiforge.runtime.search import Candidate, SearchResult

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
]

TILED = """(program {name}
  (dims ({m} {M}) ({k} {K}) ({n} {N}))
  (input x {dt} [{m} {k}])
  (input w {dt} [{k} {n}])
  (let x_tile (partition {m}.0 {m} (replicate {n}.0 x)))
  (let w_tile (partition {n}.0 {n} (replicate {m}.0 w)))
  (output out [{m} {n}] (combine {m}.0 {m} (combine {n}.0 {n} (max2 (mul (tile_matmul {k} x_tile w_tile) {c}) 0)))))
"""


class TiledStandIn:
    def __init__(self):
        self.calls = 0

    def __call__(self, ir_text, options, target, file="<program>"):
        self.calls += 1
        dims = dict(re.findall(r"\((\w+) (\d+)\)", re.search(r"\(dims[^\n]*", ir_text).group(0)))
        (m, k), (_, n) = re.findall(r"\(input \w+ \w+ \[(\w+) (\w+)\]\)", ir_text)
        dt = re.search(r"\(input x (\w+)", ir_text).group(1)
        fill = dict(name="relu_matmul", m=m, k=k, n=n, M=dims[m], K=dims[k], N=dims[n], dt=dt)
        right = TILED.format(c=1, **fill)
        wrong = TILED.format(c=3, **fill)
        return SearchResult([Candidate(1, wrong, 1e-6, {f"{m}.0": 64, f"{n}.0": 64}),
                             Candidate(2, right, 2e-6, {f"{m}.0": 64, f"{n}.0": 64})], {"distinct": 2})


@pytest.fixture
def stand_in(monkeypatch):
    s = TiledStandIn()
    monkeypatch.setattr(search, "find_candidates", s)
    return s


def relu_matmul(x, w):
    return torch.relu(x @ w)


def test_optimize_tunes_by_measurement_and_reports_timings(stand_in, tmp_path):
    x = torch.randn(256, 512, device="cuda", dtype=torch.float16)
    w = torch.randn(512, 384, device="cuda", dtype=torch.float16)
    fast = api.optimize(relu_matmul, x, w, cache_dir=tmp_path, budget_s=20, block_sizes=[32, 64, 128],
                        num_warps=[4, 8], num_stages=[2, 3])
    x2, w2 = torch.randn_like(x), torch.randn_like(w)
    y = fast(x2, w2)
    ref = relu_matmul(x2, w2)
    assert torch.linalg.vector_norm((y - ref).float()) / torch.linalg.vector_norm(ref.float()) < 1e-2
    r = fast.report
    print(r.text())
    assert r.candidate_rank == 2 and r.tuning["verify_failed"] >= 1
    assert r.tuning["measurements"] > r.tuning["verified"] or r.tuning["verified"] == 1
    for key in ("triton", "lean", "cuda_graph", "eager", "torch_compile"):
        assert r.timings.get(key), f"{key} was not measured: {r.notes}"
    assert r.runner == "lean" and r.speedup("eager") is not None
    assert all(k.time_s and k.time_s > 0 for k in r.kernels)
    # Second optimize: from the cache, no search.
    again = api.optimize(relu_matmul, x, w, cache_dir=tmp_path, budget_s=20, block_sizes=[32, 64, 128],
                         num_warps=[4, 8], num_stages=[2, 3])
    assert stand_in.calls == 1 and again.report.from_cache
    torch.testing.assert_close(again(x2, w2), y)


def test_cuda_graph_option(stand_in):
    x = torch.randn(64, 128, device="cuda", dtype=torch.float16)
    w = torch.randn(128, 32, device="cuda", dtype=torch.float16)
    fast = api.optimize(relu_matmul, x, w, cache=False, budget_s=5, cuda_graphs=True, baselines=False,
                        block_sizes=[32, 64], num_warps=[4], num_stages=[2])
    assert fast.report.runner == "cuda_graph"
    for _ in range(2):
        a, b = torch.randn_like(x), torch.randn_like(w)
        torch.testing.assert_close(fast(a, b), relu_matmul(a, b), rtol=2e-2, atol=2e-2)
