"""Kernel-private dims (src/extract/kernel_dims.h) through emission.

At 16 tokens, RMSNorm + SwiGLU FFN's first kernel writes the activation over
the intermediate dim `i` in a grid of `i.0` blocks and the second reads it in
a loop over `i`. Extraction gives the second kernel a dim of its own,
declared `(i_y i)`, so its loop block is not the first kernel's grid block.
The candidates are re-sized small (the declared-as dim follows `i`) and
their emitted kernels run in Triton's interpreter against the reference
interpreter, at block sizes drawn afresh, the two blocks apart."""

import os
import random
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import importlib  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("triton")
pytest.importorskip("torch")

check = importlib.import_module("eqiforge.check")
tuner = importlib.import_module("eqiforge.runtime.tuner")

FFN = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "rmsnorm_swiglu.eqf"
SMALL = {"m": 3, "k": 48, "i": 40, "o": 24}


@pytest.fixture(scope="module")
def extracted():
    naive = FFN.read_text()  # 16 tokens
    return naive, check.extract(naive, 2, ["--target", "h200"], source=FFN.name)


def test_the_consumer_loops_over_a_dim_of_its_own(extracted):
    _, candidates = extracted
    first = candidates[0]
    assert "(i_y i)" in first.program, first.program
    assert any("loops [i_y.0]" in k for k in first.kernels), first.kernels
    # Every tool that reads a program's dims sees its extent.
    assert tuner.program_dims(first.program)["i_y"] == 4096
    small = check.with_extents(first.program, SMALL)
    assert "(i 40)" in small and "(i_y i)" in small
    assert tuner.program_dims(small)["i_y"] == 40


def test_the_emitted_kernels_compute_the_naive_program(extracted):
    naive, candidates = extracted
    reference = check.with_extents(naive, SMALL)
    seed = random.randrange(1 << 30)  # fresh inputs and block sizes each run
    for c in candidates:
        trials = check.check_program(check.with_extents(c.program, SMALL), seed=seed, trials=3, reference=reference,
                                     source=f"{FFN.name}, candidate {c.rank}")
        for t in trials:
            assert t.ok, f"candidate {c.rank}, seed {seed}: {t.errors} with blocks {t.blocks}"
