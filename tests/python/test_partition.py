"""Large programs through eqiforge.optimize: partitioning into subgraphs,
search once per distinct subgraph, composition (runtime/partition.py), on
the CPU with Triton's interpreter."""

import math
import sys
import warnings
from pathlib import Path

import pytest
import torch

import eqiforge
from eqiforge.api import InterpreterWarning
from eqiforge.frontend import to_ir
from eqiforge.runtime import partition as P
from eqiforge.runtime import search

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


# Small search limits: the subgraphs are small, and the CPU is slow.
FAST = dict(cache=False, search_time_s=3.0, extract_time_s=10.0, baselines=False)


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()


def layer(x, g, w):
    """A residual layer: x + RMSNorm(x) W (10 IR operators)."""
    n = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g
    return x + n @ w


def stack3(x, g1, w1, g2, w2, g3, w3):
    return layer(layer(layer(x, g1, w1), g2, w2), g3, w3)


def stack2(x, g1, w1, g2, w2):
    return layer(layer(x, g1, w1), g2, w2)


def stack_args(d=16, tokens=4, layers=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    args = [torch.randn(tokens, d, generator=gen).half()]
    for _ in range(layers):
        args += [(1 + 0.1 * torch.randn(d, generator=gen)).half(), (torch.randn(d, d, generator=gen) / d ** 0.5).half()]
    return args


@pytest.fixture
def counted_search(monkeypatch):
    """search.find_candidates, counting the programs it is called on."""
    calls = []
    real = search.find_candidates

    def counting(text, options, target, file="<program>", rules=None):
        if rules is None:  # searches of high-level programs (not cut_fusion's structural ones)
            calls.append(text)
        return real(text, options, target, file, rules)

    monkeypatch.setattr(search, "find_candidates", counting)
    return calls


def test_partition_plan_of_a_stack():
    fe = to_ir(stack3, *stack_args())
    plan = P.partition_program(fe.text, 10)
    assert plan.ops == 30
    assert len(plan.subgraphs) == 3 and plan.distinct() == 1
    # The cuts are the residual stream: one [4, 16] f16 tensor each.
    assert [b.shape for b in plan.boundaries] == [(4, 16), (4, 16)]
    assert plan.outputs == [(2, 0)]


def stack8(x, *w):
    for i in range(0, len(w), 2):
        x = layer(x, w[i], w[i + 1])
    return x


def test_cuts_of_a_stack_repeat_with_its_layers():
    # At 7 operators a bound a layer of 10 needs a cut inside it; the cuts
    # repeat with the layers, so 8 layers give the distinct pieces of one
    # (plus the first layer's, which read the input) and the plan says so.
    fe = to_ir(stack8, *stack_args(layers=8))
    plan = P.partition_program(fe.text, 7)
    assert plan.ops == 80
    assert plan.period == 10 and plan.units >= 6
    assert plan.distinct() <= 4
    assert plan.to_json()["period"] == 10


def test_stack_of_identical_layers_is_searched_once(counted_search):
    args = stack_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(stack3, *args, partition_ops=10, **FAST)
    assert isinstance(fast, P.ComposedProgram)
    assert len(counted_search) == 1, "three identical layers: one search"
    assert fast.stats.subgraphs == 3 and fast.stats.distinct == 1 and fast.stats.reused == 2
    other = stack_args(seed=1)
    assert rel_l2(fast(*other), stack3(*other)) <= 1e-2
    assert fast.report.error is not None and fast.report.error <= 1e-2
    kernels = fast.report.kernels
    assert len(kernels) >= 3   # each subgraph's kernels, in order, named after their step
    names = [s.subgraph.name for s in fast.composed.steps]
    assert kernels[0].name.startswith(names[0] + ".") and kernels[-1].name.startswith(names[-1] + ".")
    # What each reads and writes, from one recorded call of its step: the
    # first step reads the program's input, each later one what the one
    # before wrote across the cut.
    assert all(k.writes or k.reads for k in kernels)
    assert "x" in kernels[0].reads
    first_out = {w for k in kernels if k.name.startswith(names[0] + ".") for w in k.writes}
    second_in = {r for k in kernels if k.name.startswith(names[1] + ".") for r in k.reads}
    assert first_out and second_in
    assert all(k.time_s is None for k in kernels)   # no per-kernel time in the interpreter


def test_a_failed_kernel_report_costs_the_detail_not_the_program(monkeypatch):
    def broken(self, *inputs):
        raise RuntimeError("recording failed")

    monkeypatch.setattr(P.Composed, "step_arguments", broken)
    args = stack_args(layers=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(stack2, *args, partition_ops=10, **FAST)
    assert isinstance(fast, P.ComposedProgram)
    assert "kernel reads, writes and times not reported: RuntimeError: recording failed" in fast.report.notes
    assert fast.report.kernels and all(not k.reads and not k.writes for k in fast.report.kernels)
    assert rel_l2(fast(*args), stack2(*args)) <= 1e-2


def test_failed_whole_program_search_falls_back_to_subgraphs(monkeypatch):
    """partition_ops=0: the program is searched whole first; a search that
    hits its limit without a candidate makes the runtime cut it."""
    args = stack_args(layers=2)
    whole = to_ir(stack2, *args).text
    real = search.find_candidates
    seen = []

    def failing_whole(text, options, target, file="<program>", rules=None):
        if rules is None:
            seen.append(text == whole)
        if text == whole:
            return search.SearchResult([], {"states_expanded": 0, "limit_hit": True})
        return real(text, options, target, file, rules)

    monkeypatch.setattr(search, "find_candidates", failing_whole)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(stack2, *args, partition_ops=0, **FAST)
    assert seen[0] is True and len(seen) == 2, "the whole program, then one search for both identical halves"
    assert isinstance(fast, P.ComposedProgram)
    assert fast.stats.reason == "the whole-program search found no candidate (it hit a search limit)"
    assert rel_l2(fast(*args), stack2(*args)) <= 1e-2


def optimize_with_whole_estimates(monkeypatch, scale: float, limit_hit: bool, **options):
    """optimize(stack2) with the whole program's search result replaced: its
    candidates' estimates scaled by `scale`, its stats saying `limit_hit`
    (on a slow machine the real search may stop at FAST's time limit).
    Returns the program and, per search, whether it was the whole program's."""
    import dataclasses

    args = stack_args(layers=2)
    whole = to_ir(stack2, *args).text
    real = search.find_candidates
    seen = []

    def replaced(text, options, target, file="<program>", rules=None):
        if rules is None:
            seen.append(text == whole)
        found = real(text, options, target, file, rules)
        if text != whole:
            return found
        assert found.candidates
        scaled = [dataclasses.replace(c, estimate_s=c.estimate_s * scale) for c in found.candidates]
        return search.SearchResult(scaled, {**found.stats, "limit_hit": limit_hit})

    monkeypatch.setattr(search, "find_candidates", replaced)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(stack2, *args, partition_ops=0, **options, **FAST)
    assert rel_l2(fast(*args), stack2(*args)) <= 1e-2
    return fast, seen


@pytest.mark.parametrize("scale", [1e3, 1e-3])
def test_a_whole_search_at_its_limit_is_compared_with_the_cut(monkeypatch, scale):
    """A whole-program search that hits a limit but has candidates: the cut
    program's subgraphs are searched too, and the lower estimate wins. The
    whole program's estimates are scaled to make it lose (1e3) or win (1e-3)."""
    fast, seen = optimize_with_whole_estimates(monkeypatch, scale, limit_hit=True)
    # The whole program, then one search for both identical halves -- not
    # repeated when the cut is composed.
    assert seen == [True, False]
    if scale > 1:
        assert isinstance(fast, P.ComposedProgram)
        assert fast.stats.reason.startswith("the whole-program search hit a limit; its best estimate")
    else:
        assert not isinstance(fast, P.ComposedProgram)


@pytest.mark.parametrize("cut_compare_ops", [14, 0])
def test_a_large_whole_program_is_compared_with_the_cut(monkeypatch, cut_compare_ops):
    """A whole-program search that ends without a limit on a program of at
    least cut_compare_ops operators (two layers: 20) is compared with the cut
    too, since best-first search is not exhaustive; the whole program's
    estimates are scaled to lose. With cut_compare_ops=0 only a limit
    triggers the comparison: one search, the whole program kept."""
    fast, seen = optimize_with_whole_estimates(monkeypatch, 1e3, limit_hit=False, cut_compare_ops=cut_compare_ops)
    if cut_compare_ops:
        assert seen == [True, False]
        assert isinstance(fast, P.ComposedProgram)
        assert fast.stats.reason.startswith("the whole-program search ended; its best estimate")
    else:
        assert seen == [True]
        assert not isinstance(fast, P.ComposedProgram)


def test_ir_evaluated_in_pytorch_matches_eager():
    """The subgraphs' reference: the captured program evaluated with PyTorch
    ops gives eager's values (layout ops, broadcasting by name, masks)."""
    from bench import workloads as W

    for name in ("sliding_window_gqa_decode", "attention_sinks_decode", "mla_qknorm_decode"):
        case = W.cases(only=[name], small=True)[0]
        inputs = W.make_inputs(case, "cpu", torch.float16)
        fe = to_ir(case.fn(), *inputs)
        ir = P.IRProgram(fe.text)
        got = ir(*[fe.input_tensors(*inputs)[i.name] for i in fe.inputs])[0]
        want = case.fn()(*inputs)
        assert rel_l2(got.reshape(want.shape), want) <= 1e-2, name


def test_saved_partitioned_program_runs(tmp_path, counted_search):
    args = stack_args(layers=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(stack3, *args, partition_ops=10, fuse_cuts=False, **FAST)
    path = fast.save(tmp_path / "stack.py")
    modules = sorted(p.name for p in tmp_path.glob("stack_*.py"))
    # One module for the three identical layers (fusion across the cuts,
    # off here, would join some of them: test_cut_fusion saves such a program).
    assert len(modules) == 1, modules
    import importlib.util

    spec = importlib.util.spec_from_file_location("saved_stack", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ins = fast.binding.module_inputs(tuple(args))
    (out,) = mod.run(*ins)
    assert rel_l2(out.reshape(4, 16), stack3(*args)) <= 1e-2


def test_decode_layer_through_optimize(counted_search):
    """Sliding-window GQA decode at its small size, cut into subgraphs of at
    most 8 operators: the composed program matches eager."""
    from bench import workloads as W

    case = W.cases(only=["sliding_window_gqa_decode"], small=True)[0]
    inputs = W.make_inputs(case, "cpu", torch.float16)
    fn = case.fn()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(fn, *inputs, partition_ops=8, **FAST)
    assert isinstance(fast, P.ComposedProgram)
    assert len(fast.plan.subgraphs) >= 2
    other = W.make_inputs(case, "cpu", torch.float16, seed=3)
    assert rel_l2(fast(*other), fn(*other)) <= 1e-2
    assert not math.isnan(fast.report.error)


def test_a_1d_layer_norm_is_cut_only_at_rows():
    """Bug 45: the mean and variance of a 1-D row are rank 0; a subgraph
    that outputs one has no candidate, so they are never boundaries, and
    optimize finds a candidate for every subgraph."""
    import torch.nn.functional as F

    def fn(x):
        return F.layer_norm(x, (7,))

    x = torch.randn(7)
    for bound in (1, 2, 3, 4):
        plan = P.partition_program(to_ir(fn, x).text, bound)
        assert len(plan.subgraphs) >= 2
        assert all(7 in b.shape for b in plan.boundaries), [b.shape for b in plan.boundaries]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(fn, x, partition_ops=3, **FAST)
    assert isinstance(fast, P.ComposedProgram)
    other = torch.randn(7, generator=torch.Generator().manual_seed(5))
    assert rel_l2(fast(other), fn(other)) <= 1e-5


def test_a_subgraph_that_cannot_be_cut_further_is_no_candidate():
    """A subgraph whose search finds nothing and that has no allowed cut
    (a rank-0 chain) is refused with NoValidCandidate, not cut into itself
    again without end."""
    from eqiforge.runtime.tuner import NoValidCandidate

    def fn(x):
        return torch.exp(x) * 2, x.sum() * 0.5 + 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        with pytest.raises(NoValidCandidate, match="cannot be cut further"):
            eqiforge.optimize(fn, torch.randn(7), partition_ops=2, **FAST)


def test_a_subgraph_partitioned_again_declares_each_output_once():
    """Bug 48: a subgraph program (its outputs named after the first cut's
    boundaries) cut again, as refinement does: its output b0_sub_ crosses
    the new cut too, and was declared twice there ("duplicate output
    `b0_sub_`"). It is one output with both roles, and every program of the
    nested plan is valid."""
    from eqiforge import _core

    text = """(program f_part0 (dims (k 11)) (input x f32 [k])
      (let sub_ (sub x (div (sum k x) 11)))
      (let e (exp sub_))
      (output b0_sub_ [k] sub_)
      (output b1_e [k] (log (add e 1))))"""
    for bound in (1, 2, 3, 4, 5):
        plan = P.partition_program(text, bound)
        assert len(plan.subgraphs) >= 2
        for sg in plan.subgraphs:
            _core.check(sg.program)
        if bound == 1:
            # sub_ ends the first subgraph: read by exp in the next one.
            assert plan.subgraphs[0].outputs == [(0, 0)]
            assert plan.outputs[0] == (0, 0) and plan.boundaries[0].consumers == [1]


def test_latent_attention_layer_through_optimize(counted_search):
    """QK-norm MLA decode at its small size: the search absorbs the
    up-projections (rules matmul-reassoc-across, factor-across-matmul), and
    the composed program matches eager on fresh inputs."""
    from bench import workloads as W

    case = W.cases(only=["mla_qknorm_decode"], small=True)[0]
    inputs = W.make_inputs(case, "cpu", torch.float16)
    fn = case.fn()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(fn, *inputs, **FAST)
    other = W.make_inputs(case, "cpu", torch.float16, seed=5)
    assert rel_l2(fast(*other), fn(*other)) <= 1e-2


def test_the_fallback_cut_keeps_a_softmax_whole():
    """Sliding-window attention (15 operators at the benchmark's size, shapes
    only): cut at half the program, the softmax's max and its exponent land
    in different subgraphs with 2 MiB between them; fallback_plan takes the
    smallest bound whose traffic is near the least, which cuts only at the
    two projections."""
    from bench import workloads as W
    from eqiforge.frontend import capture, translate
    from eqiforge.options import Options

    case = W.cases(["sliding_window_gqa_decode/b1"])[0]
    text = translate(capture(case.fn(), *W.make_inputs(case, "meta")), name="swa").text
    ops = P.partition_program(text, 1 << 30).ops
    opts = Options()
    halved = P.partition_program(text, P.first_bound(ops, opts))
    plan = P.fallback_plan(text, ops, opts)
    assert halved.boundary_bytes == 2 * 1024 * 1024
    assert [s.ops for s in plan.subgraphs] == [3, 9, 3] and plan.boundary_bytes == 32 * 1024
    assert sorted(b.name for b in plan.boundaries) == ["b0_view", "b1_matmul_2"]
    # partition_ops bounds the cut too.
    assert P.fallback_plan(text, ops, Options(partition_ops=4)).max_ops == 4
