"""bench/model_vs_gemv.py: the cost model's estimate of each measured GEMV
tiling, for narrow_tiles' rows and stream_forms' multiply-and-sum rows."""
import json

import pytest

from bench import model_vs_gemv

OPT = model_vs_gemv.REPO / "build" / "eqiforge-opt"
pytestmark = pytest.mark.skipif(not OPT.exists(), reason="build/eqiforge-opt is not built")


def run(tmp_path, capsys, data, target="h100"):
    f = tmp_path / "rows.json"
    f.write_text(json.dumps(data))
    assert model_vs_gemv.main([str(f), "--target", target, "--opt", str(OPT)]) == 0
    return capsys.readouterr().out


def test_narrow_tiles_rows_get_the_models_estimate(tmp_path, capsys):
    rows = [dict(BN=bn, BK=bk, num_warps=4, programs=1024 // bn, us=9.0) for bn, bk in [(8, 64), (8, 1024), (32, 256)]]
    out = run(tmp_path, capsys, {"device": "test", "K": 1024, "N": 1024, "rows": rows})
    lines = [ln.split() for ln in out.splitlines() if ln.split() and ln.split()[0].isdigit()]
    assert [(int(ln[0]), int(ln[1])) for ln in lines] == [(8, 64), (8, 1024), (32, 256)]
    model = [float(ln[4]) for ln in lines]
    assert all(m > 0 for m in model)
    # A loop of 16 iterations of [64, 8] tiles costs more than the whole k at once.
    assert model[0] > model[1]
    assert "over 3 tilings" in out


def test_stream_forms_multiply_and_sum_rows_without_a_split(tmp_path, capsys):
    rows = [dict(form="ptr-sum", bk=128, bn=64, warps=4, stages=3, splits=1, programs=16, us=30.0, GBps=70.0),
            dict(form="ptr-sum", bk=128, bn=64, warps=4, stages=3, splits=4, programs=64, us=20.0, GBps=100.0),
            dict(form="ptr-dot", bk=128, bn=64, warps=4, stages=3, splits=1, programs=16, us=10.0, GBps=200.0)]
    out = run(tmp_path, capsys, {"device": "test", "k": 1024, "n": 1024, "rows": rows}, target="h200")
    assert "stream_forms ptr-sum, split 1" in out
    assert "over 1 tilings" in out
