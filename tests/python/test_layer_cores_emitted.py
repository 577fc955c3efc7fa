"""The emitted Triton kernels of the decode layers' attention cores, run with
Triton's interpreter against the reference interpreter.

The forms are extracted at full size (where the search picks the kernels the
layers run on a GPU: one kernel over key blocks, then the merges), then the
candidate and the naive program are re-sized alike, small enough to
interpret, with several key blocks so the merges of partial states run. The
C++ tests (ExtractBestFirst) check that the first candidate has that form and
compare the tiled program with the naive one; these check the code emitted
for it."""

import os
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import importlib  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("triton")
pytest.importorskip("torch")

check = importlib.import_module("eqiforge.check")

WORKLOADS = Path(__file__).resolve().parents[2] / "examples" / "workloads"

# Per core: its file, the key axis of the kernel over key blocks, and small
# extents (the key dim not a multiple of most block sizes the trials draw).
CORES = {
    "attention_sink_core.eqf": ("k1.0", {"h": 3, "k1": 45, "e": 16, "n1": 16}),
    "diff_attention_core.eqf": ("t.0", {"h": 3, "t": 45, "e": 16, "f": 24}),
}


# Both GPUs' cost models: at the H100's lower bandwidth the guide once
# priced the sink's fused state past every candidate its pass found, and the
# search missed the one-kernel form (37.1 us, seven kernels, against 28.6).
@pytest.fixture(scope="module", params=[(name, target) for name in sorted(CORES) for target in ("h100", "h200")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def extracted(request):
    name, target = request.param
    naive = (WORKLOADS / name).read_text()
    return name, naive, check.extract(naive, 3, ["--target", target], source=name)


def test_the_first_candidate_reads_the_keys_in_one_kernel_of_key_blocks(extracted):
    name, _, candidates = extracted
    key_axis, _ = CORES[name]
    grids = [k.split("grid [", 1)[1].split("]", 1)[0].split() for k in candidates[0].kernels]
    assert sum(key_axis in g for g in grids) == 1, candidates[0].kernels


def test_the_emitted_kernels_compute_the_naive_program(extracted):
    name, naive, candidates = extracted
    key_axis, extents = CORES[name]
    keys = extents[key_axis.split(".")[0]]
    reference = check.with_extents(naive, extents)
    assert len(candidates) == 3
    for c in candidates:
        program = check.with_extents(c.program, extents)
        trials = check.check_program(program, seed=31, trials=3, reference=reference,
                                     source=f"{name} candidate {c.rank}")
        for t in trials:
            assert t.ok, f"candidate {c.rank}: {t.errors} with blocks {t.blocks}"
        # Some trial cuts the keys into several blocks, so partial states merge.
        key_blocks = [t.blocks[key_axis] for t in trials if key_axis in t.blocks]
        assert not key_blocks or min(key_blocks) < keys, key_blocks
