"""How the front end names dims (DESIGN §2.1): unification through the graph,
matmul's contracted dim, broadcasting by name, split/merge for heads, no
transposes, and a rename where self-attention's keys share the queries' dim."""

import re

import torch
import torch.nn.functional as F

import eqiforge
from eqiforge.frontend import to_ir
from test_frontend import check_against_eager, randn
from test_frontend_workloads import WORKLOADS, self_attention_block


def declared(text):
    """{input name: [dims]} and {output name: [dims]} of a program's text."""
    ins = {m[0]: m[1].split() for m in re.findall(r"\(input (\w+) \w+ \[([^\]]*)\]\)", text)}
    outs = {m[0]: m[1].split() for m in re.findall(r"\(output (\w+) \[([^\]]*)\]", text)}
    return ins, outs


def test_matmul_contracts_the_shared_dim_and_broadcasts_by_name():
    r = to_ir(lambda x, g, w: (x * g) @ w, randn(4, 8), randn(8), randn(8, 16))
    ins, outs = declared(r.text)
    assert ins == {"x": ["m", "k"], "g": ["k"], "w": ["k", "n"]}
    assert outs == {"out": ["m", "n"]}
    assert "(let mul_ (mul x g))" in r.text and "(matmul k mul_ w)" in r.text


def test_transposes_are_free_and_linear_weights_keep_their_layout():
    r = to_ir(lambda x, w: F.linear(x, w).t(), randn(4, 8), randn(16, 8))
    ins, outs = declared(r.text)
    assert ins == {"x": ["m", "k"], "w": ["n", "k"]}  # PyTorch's [out, in] layout
    assert outs == {"out": ["n", "m"]}  # the transpose is only the output's layout
    assert "rename" not in r.text and "(matmul k x w)" in r.text


def test_size_one_dims_are_dropped_and_restored():
    q, k = randn(2, 1, 4), randn(2, 6, 4)
    r = check_against_eager(lambda q, k: q @ k.transpose(-1, -2), q, k)
    b, e = r.inputs[0].layout
    assert r.inputs[0].ir_shape == (2, 4) and r.inputs[1].layout == (b, "n", e)
    assert r.outputs[0].shape == (2, 1, 6) and r.outputs[0].layout == (b, "n")


def test_heads_are_split_and_merged():
    fn, shapes = WORKLOADS["qk_norm_projections"]
    r = to_ir(fn, *[randn(*s) for s in shapes])
    assert "(split n h e matmul_)" in r.text
    assert "(sum e " in r.text  # the per-head norm reduces the head dim only
    assert "(merge h e " in r.text


def test_self_attention_renames_keys_to_t():
    shapes = WORKLOADS["self_attention_block"][1]
    r = to_ir(self_attention_block, *[randn(*s) for s in shapes])
    # Queries and keys come from x's sequence dim s; the keys' copy becomes t,
    # so scores are [b h s t] rather than a batch product over s.
    assert "(matmul e view (rename s t view_1))" in r.text
    assert "(max t attn_scores)" in r.text and "(sum t attn_exp)" in r.text
    assert "(rename s t view_2)" in r.text  # values are contracted over t
    assert "(le (iota t) (iota s))" in r.text  # the causal mask


def test_hand_written_attention_gets_attention_names():
    fn, shapes = WORKLOADS["attention_decode"]
    r = to_ir(fn, *[randn(*s) for s in shapes])
    ins, outs = declared(r.text)
    assert ins == {"q": ["b", "h", "e"], "k": ["b", "h", "t", "e"], "v": ["b", "h", "t", "f"]}
    assert outs == {"out": ["b", "h", "f"]}


def test_grouped_query_attention_splits_query_heads():
    q, k, v = randn(1, 4, 3, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)
    r = to_ir(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v)
    assert "(split h hkv g q)" in r.text and "(merge hkv g h " in r.text
    ins, _ = declared(r.text)
    assert ins["k"] == ["hkv", "t", "e"]


def test_mask_from_iota_comparisons():
    def masked(x):
        i = torch.arange(6)
        keep = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < 3)
        return x.masked_fill(~keep, float("-inf"))

    r = check_against_eager(masked, randn(6, 6))
    assert "(iota" in r.text and "(lt " in r.text and "(le " in r.text


def test_naming_is_deterministic():
    fn, shapes = WORKLOADS["self_attention_block"]
    args = [randn(*s) for s in shapes]
    assert to_ir(fn, *args).text == to_ir(fn, *args).text


def test_module_parameters_are_extra_inputs_after_the_arguments():
    lin = torch.nn.Linear(8, 4).double()
    r = to_ir(lin, randn(3, 8))
    assert r.input_names == ["input", "weight", "bias"]
    assert [(i.kind, i.source) for i in r.inputs] == [("arg", 0), ("parameter", "weight"), ("parameter", "bias")]
    ins, _ = declared(r.text)
    assert list(ins) == r.input_names  # the text declares them in the same order


def test_constant_tensors_become_inputs_and_numbers_are_specialized():
    w = randn(8, 4)

    def scaled(x, factor):
        return (x @ w) * factor

    r = check_against_eager(scaled, randn(3, 8), 2.5)
    assert [i.kind for i in r.inputs] == ["arg", "constant"]
    assert r.constant_args == {1: 2.5}
    assert "2.5" in r.text


def test_emitted_text_is_canonical_enough_to_round_trip():
    fn, shapes = WORKLOADS["rmsnorm_swiglu_ffn"]
    r = to_ir(fn, *[randn(*s) for s in shapes])
    printed = eqiforge.print_program(r.text)
    assert eqiforge.print_program(printed) == printed
    assert eqiforge.equiv(r.text, printed, trials=2) == 0.0


def test_an_output_merging_heads_is_written_per_head():
    # The kernel writes [h e] (row-major: the memory of [h * e]); the binding
    # reshapes. A merge as the output would be a copy kernel of its own.
    def per_head_norm(x, w, g):
        y = (x @ w).view(3, 8)
        return (y * torch.rsqrt((y * y).mean(-1, keepdim=True) + 1e-6) * g).reshape(24)

    r = check_against_eager(per_head_norm, randn(16), randn(16, 24), randn(8))
    ins, outs = declared(r.text)
    assert outs == {"out": ["h", "e"]}
    assert r.outputs[0].shape == (24,)
    # Heads moved next to the sequence, then merged: the output keeps the
    # user's order [s, h, e].
    r = check_against_eager(lambda x: (x.view(2, 5, 3, 4).transpose(1, 2) * 2).transpose(1, 2).reshape(2, 5, 12),
                            randn(2, 5, 12))
    ins, outs = declared(r.text)
    assert len(outs["out"]) == 4 and r.outputs[0].shape == (2, 5, 12)


def test_an_output_merging_an_inputs_dims_stays_a_merge():
    r = check_against_eager(lambda x: x.reshape(12), randn(3, 4))
    assert "(merge " in r.text
    _, outs = declared(r.text)
    assert len(outs["out"]) == 1
