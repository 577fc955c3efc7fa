"""The stream plan of the lean launch path (runtime/streams.py): kernels that
share no written buffer go on side streams of a captured graph, and every
launch still runs after each launch it depends on."""

import random

from eqiforge.runtime.streams import MAX_STREAMS, dependencies, plan_streams

F = frozenset


def happens_before(plan):
    """Pairs (j, i) such that launch j completes before launch i starts under
    the plan: program order within a stream, the waits, and their closure."""
    n = len(plan.stream)
    before = [set() for _ in range(n)]
    last = {}
    for i in range(n):
        s = plan.stream[i]
        preds = [last[s]] if s in last else []
        preds += plan.waits[i]
        for j in preds:
            assert j < i
            before[i] |= before[j] | {j}
        last[s] = i
    return before


def check_plan(accesses, plan):
    n = len(accesses)
    assert len(plan.stream) == len(plan.waits) == len(plan.record) == len(plan.forks) == n
    assert 0 <= min(plan.stream, default=0) and plan.streams <= MAX_STREAMS
    before = happens_before(plan)
    for i, deps in enumerate(dependencies(accesses)):
        assert deps <= before[i], (i, deps, before[i])
    for i in range(n):
        for j in plan.waits[i]:
            assert plan.record[j] and plan.stream[j] != plan.stream[i]
    # A side stream starts with a fork from the caller's and ends joined to it.
    first = {}
    for i, s in enumerate(plan.stream):
        first.setdefault(s, i)
    assert {i for s, i in first.items() if s} == {i for i, f in enumerate(plan.forks) if f}
    assert sorted(plan.joins) == sorted(max(i for i, s in enumerate(plan.stream) if s == t)
                                        for t in set(plan.stream) if t)


def test_read_after_write_write_after_read_and_write_after_write():
    acc = [(F({"x"}), F({"a"})), (F({"a"}), F({"b"})), (F({"x"}), F({"a"})), (F({"b"}), F({"b"}))]
    # 1 reads a (0 wrote it); 2 rewrites a (after 0's write, 1's read); 3 rewrites b (1 wrote it).
    assert dependencies(acc) == [set(), {0}, {0, 1}, {1}]


def test_independent_kernels_each_get_a_stream_and_are_joined():
    acc = [(F({"x", f"w{i}"}), F({f"y{i}"})) for i in range(3)]
    plan = plan_streams(acc)
    assert plan.stream == [0, 1, 2] and plan.waits == [[], [], []]
    assert plan.forks == [False, True, True] and plan.joins == [1, 2]
    check_plan(acc, plan)


def test_a_chain_stays_on_the_callers_stream():
    acc = [(F({"x"}), F({"a"})), (F({"a"}), F({"b"})), (F({"b"}), F({"c"}))]
    plan = plan_streams(acc)
    assert plan.stream == [0, 0, 0] and plan.streams == 1 and not any(plan.record)
    check_plan(acc, plan)


def test_a_diamond_waits_once_per_branch():
    acc = [(F({"x"}), F({"a"})), (F({"a"}), F({"b"})), (F({"a"}), F({"c"})), (F({"b", "c"}), F({"d"}))]
    plan = plan_streams(acc)
    assert plan.stream == [0, 0, 1, 1]
    assert plan.waits == [[], [], [0], [1]]
    check_plan(acc, plan)


def test_random_programs_keep_every_dependency():
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    for _ in range(300):
        keys = [f"b{i}" for i in range(rng.randint(1, 8))]
        acc = []
        for _ in range(rng.randint(1, 14)):
            writes = F(rng.sample(keys, rng.randint(0, min(2, len(keys)))))
            reads = F(rng.sample(keys, rng.randint(0, min(3, len(keys))))) - writes
            acc.append((reads, writes))
        for streams in (1, 2, MAX_STREAMS):
            plan = plan_streams(acc, streams)
            assert plan.streams <= streams, seed
            check_plan(acc, plan)


def test_the_reports_line_counts_the_kernels_on_side_streams():
    from types import SimpleNamespace

    from eqiforge.runtime.launch import side_stream_note

    F3 = [(F({"x"}), F({f"y{i}"})) for i in range(3)]
    lean = SimpleNamespace(plan=plan_streams(F3))
    graph = SimpleNamespace(inner=SimpleNamespace(plan=plan_streams(F3[:2])))
    assert side_stream_note([SimpleNamespace(plan=None), object()]) is None
    assert "2 of the 3 kernels of its module" in side_stream_note([lean])
    assert "3 of the 5 kernels of 2 modules" in side_stream_note([lean, graph])
    # A nested composition's steps count; a partition plan named `plan` does not.
    nested = SimpleNamespace(plan=object(), steps=[SimpleNamespace(piece=SimpleNamespace(runner=lean))])
    assert "2 of the 3 kernels of its module" in side_stream_note([nested])
    steps = plan_streams([(F({"x"}), F({"a"})), (F({"x"}), F({"b"}))])
    assert side_stream_note([nested], steps).endswith(
        "2 of the 3 kernels of its module and 1 of the 2 subgraphs run beside what they do not depend on")


def test_the_reports_line_counts_the_kernels_that_share_launches():
    from types import SimpleNamespace

    from eqiforge.runtime.launch import ModuleRunner, fused_launch_note

    module = SimpleNamespace(FUSED={"fused0_kernel": ("a_kernel", "b_kernel", "c_kernel"),
                                    "fused2_kernel": ("d_kernel", "e_kernel")}, forward=None)
    fused = ModuleRunner(module, {"block_m0": 16})
    separate = ModuleRunner(module, {"separate_launches": True})
    plain = ModuleRunner(SimpleNamespace(forward=None), {})
    assert fused_launch_note([plain, separate]) is None
    # Under a lean runner (fallback), a graph runner (inner) and a nested composition's steps.
    lean = SimpleNamespace(fallback=fused)
    nested = SimpleNamespace(steps=[SimpleNamespace(piece=SimpleNamespace(runner=SimpleNamespace(inner=lean)))])
    assert fused_launch_note([lean, separate]) == "fused launches: 5 independent kernels run side by side in 2 launches"
    assert fused_launch_note([lean, nested]).startswith("fused launches: 10 independent kernels")


def _composed(step_io):
    """A Composed of fake steps: step_io[i] = (inputs, outputs) in
    SubgraphInfo's form; each runner doubles its inputs' sum."""
    from eqiforge.runtime.partition import Composed, Piece, Plan, Step, SubgraphInfo

    steps = []
    for i, (ins, outs) in enumerate(step_io):
        info = SubgraphInfo(i, f"part{i}", f"h{i}", 1, ["add"], "", list(ins), list(outs))
        n = len(outs)
        steps.append(Step(info, Piece(f"h{i}", lambda *a, n=n: tuple(sum(a) * 2 for _ in range(n)))))
    boundaries = {b for _, outs in step_io for _, b in outs if b is not None}
    outputs = {o for _, outs in step_io for o, _ in outs if o is not None}
    plan = Plan("p", 16, 1, "node", 0, [s.subgraph for s in steps], [None] * len(boundaries),
                [(0, 0)] * len(outputs))
    return Composed(plan, steps)


def test_subgraphs_that_share_only_inputs_get_streams_of_their_own():
    # QK-norm projections: two subgraphs reading the input x, one output each.
    two = _composed([([("input", 0)], [(0, None)]), ([("input", 0)], [(1, None)])])
    assert two.stream_plan is not None and two.stream_plan.stream == [0, 1]
    # A chain through a boundary keeps one stream.
    chain = _composed([([("input", 0)], [(None, 0)]), ([("boundary", 0)], [(0, None)])])
    assert chain.stream_plan is None
    # Eagerly (and on the CPU) the steps run in order with the same values.
    import torch

    x = torch.randn(5)
    a, b = two(x)
    assert torch.equal(a, x * 2) and torch.equal(b, x * 2)
    (c,) = chain(x)
    assert torch.equal(c, x * 4)
