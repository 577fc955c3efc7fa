"""The physical floors (bench/floors.py): known shapes counted by hand, bytes
against the workloads' real inputs and outputs, matrix flops against
PyTorch's flop counter on the eager programs."""

import sys
from pathlib import Path

import pytest
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import floors as FL  # noqa: E402
from bench import workloads as W  # noqa: E402


def floor(case_id):
    case = W.case_by_id(case_id)
    return FL.floor_of(case.workload.name, case.params)


# ---- by hand ----------------------------------------------------------------------------


def test_rmsnorm_gated_mlp_b16_by_hand():
    f = floor("rmsnorm_gated_mlp/b16")
    # x 16x4096, g 4096, two 4096x4096 weights, out 16x4096; fp16
    assert f.bytes == 2 * (16 * 4096 + 4096 + 2 * 4096 * 4096 + 16 * 4096) == 67_379_200
    assert f.flops == 1_073_741_824  # two 16x4096x4096 products
    assert f.bound == "memory"
    assert f.floor_s == pytest.approx(67_379_200 / 4.3e12)


def test_lora_b1_by_hand():
    f = floor("lora/b1")
    assert f.bytes == 33_832_960   # x, W, A (4096x16), B (16x4096), out
    assert f.flops == 33_816_576   # 2*(4096*4096 + 4096*16 + 16*4096)


def test_attention_decode_b1_by_hand():
    f = floor("attention_decode/b1")
    assert f.bytes == 67_125_248   # q and out 32x128 each, K and V 32x4096x128 each
    assert f.flops == 67_108_864   # 32 heads x (QK + PV) x 2*4096*128


def test_causal_prefill_counts_kept_pairs():
    f = FL.attention_prefill({"B": 1, "H": 1, "S": 4, "E": 2})
    # 10 kept (query, key) pairs, 2*E flops each for QK and for PV
    assert f.flops == 80
    assert f.bytes == 2 * 4 * 4 * 2
    big = floor("attention_prefill/b8")
    assert big.bound == "compute"
    assert big.floor_s == pytest.approx(big.flops / 790e12)


def test_mla_counts_the_absorbed_form():
    f = floor("mla_qknorm_decode/b1")
    assert f.bytes == 93_340_160
    # q proj + out proj 2x 33.5M; absorb q and up-project o 2x 4.2M; latent scores and PV 2x 537M
    assert f.flops == 1_149_239_296


def test_sliding_window_reads_only_the_window():
    f = floor("sliding_window_gqa_decode/b1")
    assert f.bytes == 83_902_464      # x, wq, wo, out and 4096 of the 16384 cached positions
    assert f.flops == 134_217_728


def test_gap_and_bound():
    f = FL.Floor(bytes=4_300_000, flops=790_000)
    assert f.mem_s == pytest.approx(1e-6)
    assert f.compute_s == pytest.approx(1e-9)
    assert f.floor_s == pytest.approx(1e-6) and f.bound == "memory"
    assert f.gap(3e-6) == pytest.approx(3.0)
    assert f.gap(None) is None
    g = FL.Floor(bytes=1, flops=790_000_000).to_json()
    assert g["bound"] == "compute" and g["floor_s"] == pytest.approx(1e-6)
    with pytest.raises(KeyError):
        FL.floor_of("nope", {})


def test_every_workload_has_a_floor():
    assert set(FL.FLOORS) == set(W.WORKLOADS)


# ---- against the workloads themselves ---------------------------------------------------


def io_bytes(case):
    args = W.make_inputs(case, "meta")
    out = case.fn()(*args)
    outs = out if isinstance(out, tuple) else (out,)
    return sum(a.numel() for a in args) * 2 + sum(o.numel() for o in outs) * 2


@pytest.mark.parametrize("case", W.cases() + W.cases(small=True), ids=lambda c: c.id)
def test_bytes_are_inputs_and_outputs_once(case):
    f = FL.floor_of(case.workload.name, case.params)
    expected = io_bytes(case)
    if case.workload.name == "sliding_window_gqa_decode":
        p = case.params
        expected -= 2 * 2 * p["B"] * p["Hkv"] * (p["S"] - p["W"]) * p["E"]  # K and V outside the window
    assert f.bytes == expected


def eager_flops(case):
    args = W.make_inputs(case, "meta")
    with FlopCounterMode(display=False) as counter:
        case.fn()(*args)
    return counter.get_total_flops()


@pytest.mark.parametrize("case", W.cases() + W.cases(small=True), ids=lambda c: c.id)
def test_flops_against_the_flop_counter(case):
    f = FL.floor_of(case.workload.name, case.params)
    counted = eager_flops(case)
    p, name = case.params, case.workload.name
    if name == "attention_prefill":
        # eager computes every pair; the floor counts the kept half (with the diagonal)
        assert f.flops * 2 * p["S"] == counted * (p["S"] + 1)
    elif name == "sliding_window_gqa_decode":
        assert f.flops == counted - 4 * p["B"] * p["Hq"] * (p["S"] - p["W"]) * p["E"]
    elif name == "mhc_decode":
        # H_pre . x is a weighted sum in eager, a (tiny) product in the floor
        assert f.flops == counted + 2 * 2 * p["B"] * p["n"] * p["D"]
    elif name == "mla_qknorm_decode":
        assert f.flops < counted  # the absorbed form never expands keys and values
        expanded = 2 * 2 * p["B"] * p["S"] * p["C"] * p["H"] * p["E"]
        assert counted >= expanded
    else:
        assert f.flops == counted
