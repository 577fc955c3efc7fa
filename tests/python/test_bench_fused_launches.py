"""bench.fused_launches on the CPU (--small: Triton's interpreter, values
only): the first mHC subgraph with fused kernels matches the subgraph
evaluated in PyTorch in both forms."""

import json
import os

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")


def test_small_mhc_subgraph_matches_pytorch_fused_and_separate(tmp_path):
    from bench import fused_launches

    os.environ["TRITON_INTERPRET"] = "1"
    out = tmp_path / "fused.json"
    assert fused_launches.main(["--small", "--limit", "1", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 1
    row = rows[0]
    assert row["matches_pytorch"] and row["launches"] < row["kernels"]
    assert "fused_s" not in row  # nothing is timed without a GPU
