"""End to end with the real search: PyTorch program in, candidates from
saturation and extraction, emitted Triton verified and run in the CPU
interpreter, through eqiforge.optimize and through torch.compile.

Programs are small; limits keep each search within seconds to a minute.
"""

import pytest
import torch
import torch.nn.functional as F

import eqiforge.api as api
from eqiforge.options import make_options
from eqiforge.runtime import search

pytestmark = [
    pytest.mark.skipif(not search.has_extraction(), reason="extraction (eqiforge-opt extract) is not in this build"),
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
    pytest.mark.filterwarnings("ignore::eqiforge.api.InterpreterWarning"),
]

LIMITS = dict(top_k=3, search_time_s=10, extract_time_s=30)


def relu_matmul(x, w):
    return torch.relu(x @ w)


def gelu_linear(x, w, b):
    return F.gelu(x @ w + b)


def softmax_rows(x):
    return torch.softmax(x, dim=-1)


def rms_norm(x, g):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g


def naive_attention(q, k, v):
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ v


def layer_norm(x):
    return F.layer_norm(x, (x.shape[-1],))


CASES = {
    "relu_matmul": (relu_matmul, lambda: (torch.randn(12, 20), torch.randn(20, 10))),
    "gelu_linear": (gelu_linear, lambda: (torch.randn(8, 16), torch.randn(16, 12), torch.randn(12))),
    "softmax_rows": (softmax_rows, lambda: (torch.randn(6, 24),)),
    "rms_norm": (rms_norm, lambda: (torch.randn(6, 32), torch.randn(32))),
}

# Programs the search reached a candidate for only once extraction went best-first.
CASES.update({
    "layer_norm": (layer_norm, lambda: (torch.randn(5, 20),)),
    "naive_attention": (naive_attention, lambda: (torch.randn(2, 16, 8), torch.randn(2, 16, 8), torch.randn(2, 16, 8))),
})


def check(fast, fn, make_inputs):
    for _ in range(2):
        args = make_inputs()
        torch.testing.assert_close(fast(*args), fn(*args), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimize_with_the_real_search(name, tmp_path):
    fn, make_inputs = CASES[name]
    fast = api.optimize(fn, *make_inputs(), cache_dir=tmp_path, **LIMITS)
    check(fast, fn, make_inputs)
    r = fast.report
    assert r.search.get("distinct", 0) >= 1 and r.kernels
    assert r.tuning["verified"] >= 1
    # The second optimize is served by the cache.
    again = api.optimize(fn, *make_inputs(), cache_dir=tmp_path, **LIMITS)
    assert again.report.from_cache
    check(again, fn, make_inputs)


@pytest.mark.parametrize("name", ["gelu_linear", "softmax_rows"])
def test_torch_compile_with_the_real_search(name, tmp_path, monkeypatch):
    import eqiforge.backend  # noqa: F401 -- registers the backend

    monkeypatch.setenv("EQIFORGE_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    fn, make_inputs = CASES[name]
    compiled = torch.compile(fn, backend="eqiforge", options=LIMITS)
    with torch.no_grad():
        for _ in range(2):
            args = make_inputs()
            torch.testing.assert_close(compiled(*args), fn(*args), rtol=1e-4, atol=1e-5)
    assert list(tmp_path.glob("*/*.json")), "the backend did not tune anything"
    torch._dynamo.reset()


def test_demo_finds_a_flash_attention_style_kernel(tmp_path, capsys):
    from eqiforge import cli

    assert cli.main(["demo", "-o", str(tmp_path), "-q"]) == 0
    out = capsys.readouterr().out
    assert "FlashAttention-style kernel found" in out


def _cand(rank, shape):
    return search.Candidate(rank=rank, program=f"p{rank}", shape_key=(shape,))


def test_the_tuners_candidates_hold_at_most_two_of_one_shape_while_others_remain():
    cands = [_cand(1, "a"), _cand(2, "a"), _cand(3, "a"), _cand(4, "b"), _cand(5, "a"), _cand(6, "c")]
    assert [c.rank for c in search.diverse_top(cands, 4)] == [1, 2, 4, 6]
    # Too few shapes: the best of the rest fill up, in rank order.
    assert [c.rank for c in search.diverse_top(cands, 5)] == [1, 2, 3, 4, 6]
    assert [c.rank for c in search.diverse_top(cands[:3], 8)] == [1, 2, 3]


def test_candidates_of_one_structure_share_a_shape_key():
    def raw(flops, blocks):
        return {"program": "x", "estimated_us": 1.0, "block_sizes": blocks,
                "kernels": [{"name": "k", "grid": ["m.0"], "loops": [], "programs": 4, "bytes": 10.0,
                             "mma_flops": 0.0, "other_flops": flops}]}

    found = search.parse_search_result({"candidates": [raw(1.0, {"m.0": 4}), raw(1.0, {"m.0": 4}),
                                                       raw(2.0, {"m.0": 4}), raw(1.0, {"m.0": 8})]})
    keys = [c.shape_key for c in found.candidates]
    # Other flops (pointwise work moved across a matmul) are the same
    # structure; other block sizes are not.
    assert keys[0] == keys[1] == keys[2] and keys[3] != keys[0]


GATED_MLP_B1 = """(program gated_mlp (dims (k 4096) (n 4096))
  (input x f16 [k]) (input w1 f16 [k n]) (input w2 f16 [k n])
  (output y [n] (mul (silu (matmul k x w1)) (matmul k x w2))))"""


def test_extraction_gives_a_gemvs_tl_dot_form_its_own_start():
    # At one token the products are GEMVs: the cost model also sizes their
    # tl.dot form (forward's gemv_dot), whose blocks are its own -- loops
    # over k of a few hundred rows, pipelined -- where the multiply and sum
    # streams whole-k strips of 8 columns.
    found = search.find_candidates(GATED_MLP_B1, make_options(top_k=8), "h100")
    with_form = [c for c in found.candidates if "gemv_dot" in c.form_starts]
    assert with_form, [(c.rank, c.blocks) for c in found.candidates]
    for c in with_form:
        blocks, stages = c.form_starts["gemv_dot"]
        assert set(blocks) == set(c.blocks), (blocks, c.blocks)  # the same axes, other sizes
        assert stages is not None and stages >= 2
        assert blocks["n.0"] >= 16, blocks  # a tl.dot's columns: at least 16
        assert min(b for a, b in blocks.items() if a.startswith("k.")) < 4096, blocks  # a loop over k
    # The parser reads the form's estimate; a candidate without one has none.
    raw = {"program": "x", "estimated_us": 1.0, "block_sizes": {"n.0": 8}, "num_stages": 3,
           "forms": {"gemv_dot": {"estimated_us": 2.0, "block_sizes": {"k.0": 256, "n.0": 64}, "num_stages": 5}}}
    parsed = search.parse_search_result({"candidates": [raw, {**raw, "forms": None}]}).candidates
    assert parsed[0].form_starts == {"gemv_dot": ({"k.0": 256, "n.0": 64}, 5)} and parsed[1].form_starts == {}


def test_no_candidate_names_the_limit_that_stopped_saturation():
    """A node limit too small for any tiled form: the error says that no
    output has one and which option stopped saturation."""
    x, w = torch.randn(12, 20), torch.randn(20, 10)
    with pytest.raises(api.NoValidCandidate) as e:
        api.optimize(relu_matmul, x, w, cache=False, node_limit=3, partition_ops=0, **LIMITS)
    msg = str(e.value)
    assert "an output has no tiled form in the e-graph" in msg, msg
    assert "saturation stopped at its node-limit (option node_limit)" in msg, msg


def test_no_candidate_reason_names_each_limit():
    stats = {"states_expanded": 120, "saturation_stop": "time-limit", "limit_hit": True, "limit": "time"}
    assert search.no_candidate_reason(stats) == (
        "120 partial programs expanded; saturation stopped at its time-limit (option search_time_s); "
        "extraction stopped at its time limit (option extract_time_s)")
    assert search.no_candidate_reason({"states_expanded": 5, "saturation_stop": "saturated"}) == \
        "5 partial programs expanded"
    # No state expanded because extraction's time ran out first: not "no tiled form".
    assert search.no_candidate_reason({"states_expanded": 0, "limit_hit": True, "limit": "time"}) == \
        "0 partial programs expanded; extraction stopped at its time limit (option extract_time_s)"
