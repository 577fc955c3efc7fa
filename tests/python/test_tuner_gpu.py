"""The tuner and the launch paths on a GPU: real do_bench timing, the lean
launch path (compiled kernels launched directly) and CUDA-graph replay.
Skipped without CUDA. Run them with TRITON_INTERPRET=0: conftest.py turns the
interpreter on by default, and Triton then builds its library functions
(tl.sum, tl.cdiv) for the interpreter, which no GPU kernel can call."""

from pathlib import Path

import pytest
import torch

from eqiforge.options import make_options
from eqiforge.runtime.launch import (GraphRunner, LeanPathUnavailable, LeanRunner, ModuleRunner, make_runner,
                                     side_stream_note)
from eqiforge.runtime.loader import load_module
from eqiforge.runtime.tuner import Config, Tuner
from test_tuner import BLOCK_BUG, GOOD, NAN, WRONG, binding, candidates, module_source, reference

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

N = 37


def gpu_example():
    return (torch.linspace(-1, 1, N, device="cuda"),)


def test_tuner_on_the_gpu_times_only_verified_configurations():
    opts = make_options(block_sizes=[16, 32, 64], num_warps=[1, 2], num_stages=[1, 2], budget_s=20)
    tuner = Tuner(binding(), reference, gpu_example(), candidates(WRONG, NAN, BLOCK_BUG, GOOD), opts, interpret=False)
    result = tuner.run()
    best = result.best
    assert best.candidate.rank in (3, 4)
    assert dict(best.config.blocks)["block_m0"] != 32 or best.candidate.rank == 4
    assert best.time_s is not None and 0 < best.time_s < 1e-2
    s = result.stats
    # WRONG and NAN are tried once each, at their first configuration (the
    # module's default blocks, the warps nearest to 4), and dropped.
    assert [c for c, _ in tuner.history[:2]] == [Config(r, (("block_m0", 64),), 2, 2) for r in (1, 2)]
    assert [what for c, what in tuner.history if c.rank in (1, 2)] == ["wrong values", "wrong values"]
    assert s.verify_failed >= 2 and s.candidates_dropped == 2
    assert all(what != "verified" for c, what in tuner.history if c.rank == 3 and dict(c.blocks)["block_m0"] == 32)
    assert s.measurements >= s.verified
    assert s.rounds and s.rounds[-1].alive == 1
    x = torch.rand(N, device="cuda") * 4 - 2
    (y,) = best.runner(x)
    torch.testing.assert_close(y, reference(x))


def test_lean_path_gives_the_same_bits_and_guards_its_specialization():
    module = load_module(GOOD, interpret=False)
    base = ModuleRunner(module, {"block_m0": 16, "num_warps": 1, "num_stages": 1})
    x = torch.randn(N, device="cuda")
    lean = LeanRunner(base, [x])
    for _ in range(3):
        y = torch.randn(N, device="cuda")
        assert torch.equal(lean(y)[0], base(y)[0])
    # An input that is not 16-byte aligned is not what the kernel was
    # specialized for: the normal launch path runs it.
    calls = []
    normal = lean.fallback
    lean.fallback = lambda *a: (calls.append(1), normal(*a))[1]
    unaligned = torch.randn(N + 1, device="cuda")[1:]
    torch.testing.assert_close(lean(unaligned)[0], reference(unaligned))
    assert calls == [1]
    lean(torch.randn(N, device="cuda"))
    assert calls == [1]


def test_lean_path_reuses_intermediates_and_returns_fresh_outputs():
    # Flash-decoding: a split kernel writes three partial-state buffers, a
    # merge kernel reads them. The lean path keeps the partial states between
    # calls on one stream; every call's output is a tensor of its own.
    # (Not eqiforge.check's emit: that module patches Triton for its interpreter.)
    from pathlib import Path

    from eqiforge.runtime.search import emit_module
    text = (Path(__file__).parents[2] / "examples/attention_decode/flash_decoding.eqf").read_text()
    module = load_module(emit_module(text), interpret=False)
    base = ModuleRunner(module, {"block_t0": 8})
    shapes = [(3, 1, 8), (3, 29, 8), (3, 29, 8)]
    draw = lambda: [torch.randn(s, device="cuda") for s in shapes]
    lean = LeanRunner(base, draw())
    seen = []
    for _ in range(3):
        inputs = draw()
        (out,) = lean(*inputs)
        assert torch.equal(out, base(*inputs)[0])
        seen.append(out)
    # The three outputs are distinct tensors that kept their own values.
    assert len({t.data_ptr() for t in seen}) == 3
    inputs = draw()
    kept = seen[0].clone()
    lean(*inputs)
    assert torch.equal(seen[0], kept)
    # Another stream gets intermediates of its own.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        (out,) = lean(*inputs)
    side.synchronize()
    assert torch.equal(out, base(*inputs)[0]) and len(lean._scratch) == 2


def test_lean_path_refuses_interpreted_kernels():
    module = load_module(GOOD, interpret=True)
    with pytest.raises(LeanPathUnavailable, match="interpreter"):
        LeanRunner(ModuleRunner(module, {}), [torch.randn(N)])


def test_cuda_graph_replay_copies_inputs_and_reuses_outputs():
    module = load_module(GOOD, interpret=False)
    runner, notes = make_runner(module, {"block_m0": 32}, [torch.randn(N, device="cuda")], cuda_graphs=True)
    assert isinstance(runner, GraphRunner) and notes == []
    a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    ya = runner(a)[0].clone()
    yb = runner(b)[0]
    torch.testing.assert_close(ya, reference(a))
    torch.testing.assert_close(yb, reference(b))


def test_launch_path_timings_for_a_tiny_kernel():
    from eqiforge.runtime.measure import path_timings

    module = load_module(module_source("tl.exp(x) * 2.0"), interpret=False)
    timings, notes = path_timings(module, {"block_m0": 64}, [torch.randn(N, device="cuda")])
    assert notes == []
    assert set(timings) == {"triton", "lean", "cuda_graph"} and all(v and v > 0 for v in timings.values())
    print("launch paths, seconds per call:", timings)
    # For a kernel this small the call is host-bound: the lean path must pay off.
    assert timings["lean"] < timings["triton"]


def test_configurations_compiled_ahead_are_found_in_tritons_cache_and_run_the_same(tmp_path, monkeypatch):
    from eqiforge.runtime.tuner import Precompiler
    from eqiforge.runtime.measure import graph_timer

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    source = module_source("tl.exp(x) * 2.0 + 0.125")  # code no other test compiles
    module = load_module(source, interpret=False)
    x = torch.randn(N, device="cuda")
    config = Config(1, (("block_m0", 32),), 2, 2)
    pre = Precompiler(2, [x])
    pre.submit(source, config)
    pre.wait(config)
    pre.close()
    compiled = list((tmp_path / "triton").rglob("*.cubin"))
    assert compiled, "the compilation ahead wrote nothing to Triton's cache"
    # The module proper, launched now, runs from the cache (nothing new is
    # compiled) and computes the same.
    (y,) = module.forward(x, **config.params())
    assert sorted((tmp_path / "triton").rglob("*.cubin")) == sorted(compiled)
    torch.testing.assert_close(y, torch.exp(x) * 2.0 + 0.125)
    assert graph_timer(lambda: module.forward(x, **config.params()), 5.0) > 0


THREE_HEADS = """(program three_heads
  (dims (m 8) (k 32) (e 4) (h 6))
  (input x f32 [m k])
  (input wa f32 [k e])
  (input wb f32 [k h])
  (let a (matmul k x wa))
  (output ya [m e] a)
  (output yb [m h] (sigmoid (matmul k x wb)))
  (output yc [m] (add (sum e a) 1)))
"""


def test_a_captured_graph_runs_independent_kernels_on_side_streams_with_the_same_values():
    check = pytest.importorskip("eqiforge.check")
    module = load_module(check.emit(THREE_HEADS), interpret=False)
    inputs = [torch.randn(8, 32, device="cuda"), torch.randn(32, 4, device="cuda"), torch.randn(32, 6, device="cuda")]
    base = ModuleRunner(module, {"separate_launches": True})
    lean = LeanRunner(base, inputs)
    # Three kernels, each reading the inputs only, launched separately: three streams.
    assert lean.plan is not None and lean.plan.streams == 3
    assert "2 of the 3 kernels" in side_stream_note([lean])
    expected = [t.clone() for t in base(*inputs)]
    graph = GraphRunner(lean, inputs)
    for _ in range(3):
        fresh = [torch.randn_like(t) for t in inputs]
        got = graph(*fresh)
        torch.cuda.synchronize()
        want = base(*fresh)
        assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert not any(torch.equal(a, b) for a, b in zip(got, expected))


def test_independent_kernels_in_one_fused_launch_give_the_separate_launches_values():
    check = pytest.importorskip("eqiforge.check")
    from programs import TWO_LEVELS

    for text, shapes, launches in ((THREE_HEADS, [(8, 32), (32, 4), (32, 6)], 1),
                                   (TWO_LEVELS, [(6, 20), (20, 12), (20, 12)], 2)):
        module = load_module(check.emit(text), interpret=False)
        inputs = [torch.randn(*s, device="cuda") for s in shapes]
        fused = ModuleRunner(module, {})
        separate = ModuleRunner(module, {"separate_launches": True})
        lean = LeanRunner(fused, inputs)   # checks its bits against the fused launch path
        assert len(lean.launches) == launches
        # The members' code is the same in both forms; the compiler may still
        # order a sum's terms differently inside the fused kernel.
        want = separate(*inputs)
        for got in (fused(*inputs), lean(*inputs), GraphRunner(lean, inputs)(*inputs)):
            torch.cuda.synchronize()
            assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(got, want))


def test_kernels_that_read_each_others_buffers_stay_on_one_stream():
    check = pytest.importorskip("eqiforge.check")
    text = (Path(__file__).resolve().parents[2] / "examples/attention_decode/flash_decoding.eqf").read_text()
    module = load_module(check.emit(text), interpret=False)
    assert list(module.WRITES) == ["states_kernel", "o_kernel"]
    inputs = [torch.randn(3, 1, 8, device="cuda"), torch.randn(3, 29, 8, device="cuda"), torch.randn(3, 29, 8, device="cuda")]
    lean = LeanRunner(ModuleRunner(module, {}), inputs)
    assert lean.plan is None


def test_independent_subgraphs_run_on_side_streams_in_a_captured_graph_with_the_same_values():
    from test_streams import _composed

    composed = _composed([([("input", 0)], [(0, None)]), ([("input", 0)], [(None, 0)]),
                          ([("boundary", 0), ("input", 0)], [(1, None)])])
    assert composed.stream_plan.stream == [0, 1, 1]
    x = torch.randn(1 << 16, device="cuda")
    graph = GraphRunner(composed, [x])      # warms up eagerly (the streams are made there), then captures
    assert composed._side
    for _ in range(3):
        fresh = torch.randn_like(x)
        a, b = graph(fresh)
        torch.cuda.synchronize()
        assert torch.equal(a, fresh * 2) and torch.equal(b, (fresh * 2 + fresh) * 2)
