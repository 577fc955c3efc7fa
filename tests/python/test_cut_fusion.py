"""Fusion across a partition's cuts (runtime/cut_fusion.py): consecutive
tuned subgraphs whose consumer takes the producer's tiles directly become
one program, verified like any other, on the CPU with Triton's interpreter."""

import warnings

import pytest
import torch

import eqiforge
from eqiforge.api import InterpreterWarning
from eqiforge.runtime import partition as P
from eqiforge.runtime.cut_fusion import _rename_map, _renamed

FAST = dict(cache=False, search_time_s=3.0, extract_time_s=10.0, baselines=False)


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want)).item()


def rows(x):
    """Normalize each row, square it, three times: a chain of row reductions
    (like mHC's Sinkhorn iterations) that a bound of a few operators cuts
    into pieces of one kernel each, over the same row tiles."""
    p = x
    for _ in range(3):
        p = p / p.sum(-1, keepdim=True)
        p = p * p
    return p


def test_a_renaming_between_programs_equal_up_to_names():
    a = "(program p (dims (m 4) (e 2)) (input x f16 [m e]) (let t (sum e x)) (output y [m] t))"
    b = "(program q (dims (m 4) (h 2)) (input z f16 [m h]) (let t (sum h z)) (output w [m] t))"
    mapping = _rename_map(a, b)
    assert mapping == {"p": "q", "e": "h", "x": "z", "y": "w"}
    tiled = "(program p (dims (m 4) (e 2)) (input x f16 [m e]) (output y [m] (combine m.0 m (sum e (partition m.0 m x)))))"
    assert _renamed(tiled, {"m": "n", "x": "z"}) == \
        "(program p (dims (n 4) (e 2)) (input z f16 [n e]) (output y [n] (combine n.0 n (sum e (partition n.0 n z)))))"
    # A structure that differs is no renaming; nor is a new name the text already uses.
    assert _rename_map(a, b.replace("(sum h z)", "(max h z)")) is None
    assert _renamed(tiled, {"x": "y"}) is None


def test_a_renaming_where_the_dims_are_listed_in_another_order():
    # One structure (mHC's two connections): the second lists its dims in
    # another order and shifts names onto each other (e -> h, h -> h2).
    a = ("(program p (dims (m 4) (e 2) (h 3)) (input x f16 [m e]) (input w f16 [e h])"
         " (let t (matmul e x w)) (output y [m h] t))")
    b = ("(program q (dims (h2 3) (m 4) (h 2)) (input z f16 [m h]) (input v f16 [h h2])"
         " (let t (matmul h z v)) (output o [m h2] t))")
    assert _rename_map(a, b) == {"p": "q", "e": "h", "h": "h2", "x": "z", "w": "v", "y": "o"}
    # The extents must follow the names.
    assert _rename_map(a, b.replace("(h2 3)", "(h2 5)")) is None
    # One to one: a name kept as it is cannot also be another's image.
    c = "(program p (dims (m 4) (e 2)) (input x f16 [m e]) (input m2 f16 [m e]) (output y [m e] (add x m2)))"
    d = "(program p (dims (m 4) (e 2)) (input m2 f16 [m e]) (input m2 f16 [m e]) (output y [m e] (add m2 m2)))"
    assert _rename_map(c, d) is None
    # Tiled texts: axes and collected axes name their dims.
    t1 = "(program p (dims (k 8) (e 2)) (input x f16 [k e]) (output y [e] (sum c_k.0 (collect k.0 (sum k (partition k.0 k x))))))"
    t2 = "(program p (dims (e 2) (k3 8)) (input x f16 [k3 e]) (output y [e] (sum c_k3.0 (collect k3.0 (sum k3 (partition k3.0 k3 x))))))"
    assert _rename_map(t1, t2) == {"k": "k3"}
    assert _rename_map(t1, t2.replace("c_k3.0", "k3.0")) is None
    # A collected axis's dim follows its dim; a name that only starts alike does not.
    assert _renamed("(reduce c_k1.0 (collect k1.0 x)) c_k1x k1", {"k1": "k3"}) == \
        "(reduce c_k3.0 (collect k3.0 x)) c_k1x k3"


@pytest.mark.parametrize("fuse", [True, False])
def test_a_chain_cut_into_pieces_runs_as_one_kernel(fuse):
    x = 0.5 + torch.rand(8, 4, 4, generator=torch.Generator().manual_seed(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(rows, x, partition_ops=4, fuse_cuts=fuse, **FAST)
    assert isinstance(fast, P.ComposedProgram)
    assert fast.stats.subgraphs >= 3
    other = 0.5 + torch.rand(8, 4, 4, generator=torch.Generator().manual_seed(4))
    assert rel_l2(fast(other), rows(other)) <= 1e-4
    if not fuse:
        assert fast.stats.fused == [] and len(fast.composed.steps) == fast.stats.subgraphs
        return
    kept = [g for g in fast.stats.fused if g["kept"]]
    assert kept, fast.stats.fused
    first = kept[0]
    assert len(first["subgraphs"]) >= 2 and first["fused"]
    assert first["kernels"][1] < first["kernels"][0]
    assert first["estimate_s"][1] < first["estimate_s"][0]
    assert len(fast.composed.steps) < fast.stats.subgraphs
    # The report says what was joined.
    assert any(n.startswith(f"fusion across cuts: subgraphs {', '.join(map(str, first['subgraphs']))} joined")
               for n in fast.report.notes), fast.report.notes


def test_a_group_kept_apart_says_why_in_the_report(monkeypatch):
    from eqiforge.runtime import cut_fusion, tuner

    class Refusing(tuner.Tuner):
        def run(self):
            raise tuner.NoValidCandidate("every candidate failed its check")

    original = cut_fusion.CutFusion.run

    def run(self, *args, **kwargs):
        # The subgraphs are tuned already: only the joined groups meet the refusal.
        monkeypatch.setattr(tuner, "Tuner", Refusing)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cut_fusion.CutFusion, "run", run)
    x = 0.5 + torch.rand(8, 4, 4, generator=torch.Generator().manual_seed(7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(rows, x, partition_ops=4, **FAST)
    assert fast.stats.fused and not any(g["kept"] for g in fast.stats.fused)
    assert all(g["apart"] == "no candidate verified (every candidate failed its check)" for g in fast.stats.fused)
    assert len(fast.composed.steps) == fast.stats.subgraphs
    notes = [n for n in fast.report.notes if n.startswith("fusion across cuts")]
    assert notes and all("kept apart" in n and n.endswith("; no candidate verified (every candidate failed its check)")
                         for n in notes), notes
    assert rel_l2(fast(x), rows(x)) <= 1e-4


def test_a_group_kept_apart_gives_way_to_its_prefix(monkeypatch):
    from eqiforge.runtime.cut_fusion import CutFusion

    original = CutFusion._tune

    def tune(self, info, ir, args, group):
        if len(group.steps) > 2:   # the whole chain does not pay; its first two do
            self.apart[group.key] = "refused for the test"
            return None
        return original(self, info, ir, args, group)

    monkeypatch.setattr(CutFusion, "_tune", tune)
    x = 0.5 + torch.rand(8, 4, 4, generator=torch.Generator().manual_seed(8))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(rows, x, partition_ops=4, **FAST)
    assert fast.stats.subgraphs == 3
    whole, prefix = fast.stats.fused
    assert whole["subgraphs"] == [0, 1, 2] and not whole["kept"] and whole["apart"] == "refused for the test"
    assert prefix["subgraphs"] == [0, 1] and prefix["kept"] and prefix["kernels"][1] < prefix["kernels"][0]
    # The prefix in place of its members, the last subgraph on its own.
    assert len(fast.composed.steps) == 2
    assert fast.composed.steps[1].subgraph.index == 2
    notes = [n for n in fast.report.notes if n.startswith("fusion across cuts")]
    assert notes[0].startswith("fusion across cuts: subgraphs 0, 1, 2 kept apart")
    assert notes[1].startswith("fusion across cuts: subgraphs 0, 1 joined")
    other = 0.5 + torch.rand(8, 4, 4, generator=torch.Generator().manual_seed(9))
    assert rel_l2(fast(other), rows(other)) <= 1e-4


def test_a_fused_program_saves_and_runs(tmp_path):
    x = 0.5 + torch.rand(8, 4, 4, generator=torch.Generator().manual_seed(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(rows, x, partition_ops=4, **FAST)
    path = fast.save(tmp_path / "rows.py")
    import importlib.util

    spec = importlib.util.spec_from_file_location("saved_rows", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    got = module.run(x.reshape(8, 4, 4))[0]
    assert rel_l2(got.reshape(8, 4, 4), rows(x)) <= 1e-4


def test_a_reused_piece_offers_its_chosen_program_then_its_alternatives_under_each_subgraphs_names():
    from eqiforge.runtime.cut_fusion import CutFusion

    first = "(program a (dims (m 4) (e 2)) (input x f16 [m e]) (let t (sum e x)) (output y [m] t))"
    later = "(program b (dims (m 4) (h 2)) (input z f16 [m h]) (let t (sum h z)) (output w [m] t))"
    chosen = "(program a (dims (m 4) (e 2)) (input x f16 [m e]) (output y [m] (combine m.0 m (sum e (partition m.0 m x)))))"
    other = "(program a (dims (m 4) (e 2)) (input x f16 [m e]) (output y [m] (sum e x)))"
    piece = P.Piece("h", None, program=chosen, subgraph_program=first, alternatives=[chosen, other])
    info = P.SubgraphInfo(1, "b", "h", 1, ["sum"], later, [("input", 0)], [(0, None)])
    programs = CutFusion._programs(P.Step(info, piece), 8)
    assert programs == [
        "(program b (dims (m 4) (h 2)) (input z f16 [m h]) (output w [m] (combine m.0 m (sum h (partition m.0 m z)))))",
        "(program b (dims (m 4) (h 2)) (input z f16 [m h]) (output w [m] (sum h z)))",
    ]
    assert CutFusion._programs(P.Step(info, piece), 0) == programs[:1]


def two_norms(x, wq, wk):
    """Per-head RMS norms of two projections of x: two paths that share only
    their input (QK-norm projections, small), which a bound of 8 operators
    cuts into one subgraph each."""
    q = (x @ wq).view(4, 2, 8)
    k = (x @ wk).view(4, 2, 8)
    q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6)
    k = k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + 1e-6)
    return q, k


def test_independent_subgraphs_join_side_by_side_and_share_launches():
    g = torch.Generator().manual_seed(6)
    args = [torch.randn(4, 32, generator=g), torch.randn(32, 16, generator=g), torch.randn(32, 16, generator=g)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InterpreterWarning)
        fast = eqiforge.optimize(two_norms, *args, partition_ops=8, **FAST)
    assert isinstance(fast, P.ComposedProgram) and fast.stats.subgraphs == 2
    [group] = fast.stats.fused
    # Nothing passes between them: joined with no boundary, at a lower
    # estimate (one launch a level instead of one a kernel).
    assert group["subgraphs"] == [0, 1] and group["fused"] == [] and group["kept"]
    assert group["estimate_s"][1] < group["estimate_s"][0]
    [step] = fast.composed.steps
    assert len(step.piece.module.FUSED) >= 1
    assert any(n.startswith("fused launches: ") for n in fast.report.notes), fast.report.notes
    other = [torch.randn(a.shape, generator=g) for a in args]
    for got, want in zip(fast(*other), two_norms(*other)):
        assert rel_l2(got, want) <= 1e-4
