"""The batch-1 forms of a chain of GEMVs (RMSNorm + SwiGLU FFN at one
token), extracted at full size and run with Triton's interpreter against
the reference interpreter.

At one token every weight is read by a kernel without dots (the product is
multiplied and summed on the FP units), and the cost model charges such a
kernel no DRAM bandwidth for short rows (src/cost/cost_model.cc:
dram_efficiency): the first candidate reads the whole k in tiles of a few
columns, with no loop, where it used to loop over k in 128-byte rows.
The candidates are re-sized small, as the naive program, to be interpreted."""

import os
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import importlib  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("triton")
pytest.importorskip("torch")

check = importlib.import_module("eqiforge.check")

FFN = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "rmsnorm_swiglu.eqf"
SMALL = {"m": 1, "k": 48, "i": 40, "o": 24}


@pytest.fixture(scope="module", params=["h100", "h200"])
def extracted(request):
    naive = check.with_extents(FFN.read_text(), {"m": 1})
    return naive, check.extract(naive, 3, ["--target", request.param], source=FFN.name)


def test_the_first_candidate_reads_each_weight_whole_along_k_without_a_loop(extracted):
    _, candidates = extracted
    kernels = candidates[0].kernels
    assert len(kernels) == 2, kernels
    assert all(k.endswith("loops []") for k in kernels), kernels


def test_the_emitted_kernels_compute_the_naive_program(extracted):
    naive, candidates = extracted
    reference = check.with_extents(naive, SMALL)
    assert len(candidates) == 3
    for c in candidates:
        trials = check.check_program(check.with_extents(c.program, SMALL), seed=7, trials=3, reference=reference,
                                     source=f"{FFN.name} at m=1, candidate {c.rank}")
        for t in trials:
            assert t.ok, f"candidate {c.rank}: {t.errors} with blocks {t.blocks}"


# The same FFN as the frontend captures one token: no m dim at all (the IR
# has no size-1 dims), so each projection is a GEMV of a vector, which the
# emitter writes in two forms (forward's gemv_dot). Every form of the leading
# candidates -- those extraction also sized in the tl.dot form included --
# against the naive program, re-sized small.
FFN_ONE_TOKEN = """(program rmsnorm_swiglu (dims (k 4096) (i 4096) (o 4096))
  (input x f16 [k]) (input g f16 [k]) (input wg f16 [k i]) (input wu f16 [k i]) (input wd f16 [i o])
  (let xn (mul (mul x (rsqrt (add (div (sum k (mul x x)) 4096) 1e-6))) g))
  (let act (mul (silu (matmul k xn wg)) (matmul k xn wu)))
  (output y [o] (matmul i act wd)))"""
SMALL_ONE_TOKEN = {"k": 48, "i": 40, "o": 24}


def test_both_gemv_forms_of_the_one_token_candidates_compute_the_naive_program():
    candidates = check.extract(FFN_ONE_TOKEN, 4, ["--target", "h100"], source="ffn one token")
    reference = check.with_extents(FFN_ONE_TOKEN, SMALL_ONE_TOKEN)
    forms = set()
    for c in candidates:
        trials = check.check_program(check.with_extents(c.program, SMALL_ONE_TOKEN), seed=11, trials=2,
                                     reference=reference, source=f"ffn one token, candidate {c.rank}")
        forms |= {tuple(t.forms) for t in trials}
        for t in trials:
            assert t.ok, f"candidate {c.rank}: {t.errors} with blocks {t.blocks} and forms {t.forms}"
    assert ("gemv_dot",) in forms, "no candidate had a GEMV in two forms"
