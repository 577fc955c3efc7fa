"""The benchmark report (bench/report.py) from hand-made rows: which baseline
is the fastest, the speedups and their geometric mean, gaps to the floor,
failures with their reasons, the search-cost table, the files written."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import report as R  # noqa: E402
from bench.floors import floor_of  # noqa: E402
from bench.workloads import case_by_id  # noqa: E402

US = 1e-6


def row(case_id, impl, status="ok", bench_us=None, gpu_us=None, time="2026-11-30T10:00:00+00:00", **extra):
    case = case_by_id(case_id)
    r = {"schema": 1, "run": "r1", "time": time, "id": case_id, "workload": case.workload.name,
         "family": case.workload.family, "title": case.workload.title, "config": case.config.label,
         "params": case.params, "impl": impl, "status": status, "reason": None, "device": "NVIDIA H200",
         "floor": floor_of(case.workload.name, case.params).to_json(),
         "do_bench_s": bench_us * US if bench_us else None, "gpu_s": gpu_us * US if gpu_us else None,
         "wall_s": 2.0, "setup_s": 1.0, "notes": [], "versions": {"torch": "2.11.0", "triton": "3.6.0"}}
    r.update(extra)
    return r


SEARCH = {"report": {"candidates": 5, "from_cache": False, "runner": "lean",
                     "kernels": [{"name": "k0"}, {"name": "k1"}],
                     "search": {"egraph": {"enodes": 900, "eclasses": 300, "saturation_seconds": 1.25},
                                "seconds": 0.5, "states_expanded": 4000},
                     "tuning": {"seconds": 12.0, "candidates": 4, "configs_tried": 40}}}


def sample_rows():
    return [
        # lora/b1: compile is the fastest baseline; ours 2x faster in do_bench, 1.5x in GPU time
        row("lora/b1", "eager", bench_us=40, gpu_us=30),
        row("lora/b1", "torch_compile", bench_us=30, gpu_us=24),
        row("lora/b1", "ours", bench_us=15, gpu_us=16, ours=SEARCH),
        # lora/b8: compile gave wrong values: eager is the fastest correct baseline; ours slower
        row("lora/b8", "eager", bench_us=40, gpu_us=32),
        row("lora/b8", "torch_compile", status="wrong", bench_us=5, gpu_us=5, reason="relative L2 error 0.5"),
        row("lora/b8", "ours", bench_us=50, gpu_us=40, ours={"report": {"search": {"states_expanded": 10}}}),
        # gated_mlp/b1: ours failed
        row("gated_mlp/b1", "eager", bench_us=20, gpu_us=18),
        row("gated_mlp/b1", "ours", status="failed", reason="NoValidCandidate: every candidate failed"),
        # decode b1: SDPA-flash is the fastest baseline
        row("attention_decode/b1", "eager", bench_us=60, gpu_us=50),
        row("attention_decode/b1", "sdpa_flash", bench_us=30, gpu_us=25),
        row("attention_decode/b1", "torch_compile", bench_us=45, gpu_us=40),
        row("attention_decode/b1", "ours", bench_us=20, gpu_us=20, time="2026-11-30T23:59:00+00:00"),
        {"id": "_ceilings", "impl": "ceilings", "status": "ok", "copy_bytes_per_s": 4.31e12,
         "mma_flop_per_s": 7.9e14, "time": "2026-11-30T09:00:00+00:00", "device": "NVIDIA H200"},
    ]


def test_speedups_against_the_fastest_correct_baseline():
    s = R.summarize(sample_rows())
    by = {c["id"]: c for c in s["cases"]}
    assert [c["id"] for c in s["cases"]] == ["lora/b1", "lora/b8", "gated_mlp/b1", "attention_decode/b1"]
    assert by["lora/b1"]["fastest"]["do_bench"]["impl"] == "torch_compile"
    assert by["lora/b1"]["speedup"]["do_bench"] == pytest.approx(2.0)
    assert by["lora/b1"]["speedup"]["gpu"] == pytest.approx(1.5)
    assert by["lora/b8"]["fastest"]["do_bench"]["impl"] == "eager"   # the wrong compile row does not count
    assert by["lora/b8"]["speedup"]["do_bench"] == pytest.approx(0.8)
    assert by["gated_mlp/b1"]["speedup"]["do_bench"] is None
    assert by["attention_decode/b1"]["fastest"]["gpu"]["impl"] == "sdpa_flash"
    assert by["attention_decode/b1"]["speedup"]["gpu"] == pytest.approx(1.25)
    floor_s = by["lora/b1"]["floor"]["floor_s"]
    assert by["lora/b1"]["gap_ours"]["do_bench"] == pytest.approx(15 * US / floor_s)
    assert by["lora/b1"]["gap_fastest"]["gpu"] == pytest.approx(24 * US / floor_s)
    t = s["totals"]["general"]["do_bench"]
    assert t["compared"] == 2 and t["wins"] == 1
    assert t["geomean_speedup"] == pytest.approx(math.sqrt(2.0 * 0.8))
    assert t["min_speedup"] == pytest.approx(0.8) and t["max_speedup"] == pytest.approx(2.0)
    assert s["totals"]["general"]["configs"] == 3


def test_the_last_row_wins_and_a_dry_run_never_hides_a_measurement():
    rows = [row("lora/b1", "eager", bench_us=40), row("lora/b1", "eager", bench_us=20),
            row("lora/b1", "eager", status="dry_run")]
    assert R.latest(rows)[("lora/b1", "eager")]["do_bench_s"] == pytest.approx(20 * US)
    rows = [row("lora/b1", "eager", status="dry_run"), row("lora/b1", "eager", status="failed", reason="x")]
    assert R.latest(rows)[("lora/b1", "eager")]["status"] == "failed"


def test_markdown_tables(tmp_path):
    plan = {"jobs": [{"id": "lora/b1", "impl": "eager"}, {"id": "lora/b16", "impl": "ours"}]}
    rows = sample_rows()
    md = R.markdown(R.summarize(rows), R.meta_of(rows), rows, plan)
    assert "| lora/b1 | 7.9 | memory | 40.0 | 30.0 | 15.0 | torch.compile | 2.00x |" in md
    assert "wrong: relative L2 error 0.5" in md
    assert "gated_mlp/b1 ours: failed: NoValidCandidate: every candidate failed" in md
    assert "| decode b1: ≥ 1.5x SDPA-flash | 1.50x | 1.25x |" in md
    assert "1.26x over 2/3, 1 slower" in md     # sqrt(2 * 0.8)
    assert "copy 4.31 TB/s" in md
    # search cost: the numbers from optimize's report; what it lacks is said
    assert "| lora/b1 | 900 | 300 | 1.25 | 0.5 | 4000 | 5 | 12 | 4 | 40 | 2 | lean | 1 | no |" in md
    assert "| lora/b8 | – | – | – | – | 10 |" in md
    assert "not exposed by optimize's report" in md
    assert "## Not run" in md and "lora/b16 ours" in md
    assert "| total |" in md


def test_write_report_files(tmp_path):
    paths = R.write_report(sample_rows(), tmp_path, plan=None)
    names = sorted(p.name for p in paths)
    assert "h200-2026-11-30.json" in names and "h200-2026-11-30.md" in names
    data = json.loads((tmp_path / "h200-2026-11-30.json").read_text())
    assert len(data["rows"]) == 13
    assert data["totals"]["attention"]["gpu"]["geomean_speedup"] == pytest.approx(1.25)
    assert data["meta"]["ceilings"]["mma_flop_per_s"] == pytest.approx(7.9e14)
    assert {c["id"] for c in data["configs"]} == {"lora/b1", "lora/b8", "gated_mlp/b1", "attention_decode/b1"}


def test_charts_normalized_to_ours(tmp_path):
    pytest.importorskip("matplotlib")
    paths, why = R.charts(R.summarize(sample_rows()), tmp_path, "h200-x")
    assert why is None
    assert sorted(p.name for p in paths) == ["h200-x-attention.png", "h200-x-general.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_command(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in sample_rows()) + "\n")
    dest = tmp_path / "out"
    assert R.main([str(results), "--dest", str(dest)]) == 0
    assert (dest / "h200-2026-11-30.md").exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert R.main([str(empty), "--dest", str(dest)]) == 1


def test_tags():
    assert R.tag_of({"devices": ["NVIDIA H200"]}) == "h200"
    assert R.tag_of({"devices": ["cpu"]}) == "cpu"
    assert R.tag_of({"devices": ["NVIDIA A100-SXM4-80GB"]}) == "nvidia-a100-sxm4-80gb"
    assert R.date_of({"last": "2026-12-01T00:00:00+00:00"}) == "2026-12-01"
