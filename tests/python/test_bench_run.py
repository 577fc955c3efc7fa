"""The benchmark runner (bench/run.py) on the CPU, with torch only: the jobs
of a worker in-process, and the whole command in subprocesses where the
point is isolation (a crash, a hang) and resuming.

"Ours" comes from tests/python/bench_fakes.py here, a stand-in for
eqiforge.optimize whose behaviour each test chooses, so these tests cover
the runner and not the optimizer.
"""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import run  # noqa: E402
from bench import timing  # noqa: E402
from bench.workloads import WORKLOADS, cases  # noqa: E402

HERE = Path(__file__).resolve().parent
ROW_KEYS = {"schema", "run", "time", "id", "workload", "family", "config", "params", "impl", "status", "reason",
            "device", "dtype", "input_bytes", "floor", "rel_err", "correct", "do_bench_s", "gpu_s", "gap_do_bench",
            "gap_gpu", "setup_s", "wall_s", "rotating_sets", "notes"}


@pytest.fixture
def cache_env(monkeypatch, tmp_path):
    """main() points the compilers' caches into its output directory; keep
    that out of the test process's environment."""
    for key in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "EQIFORGE_CACHE_DIR"):
        monkeypatch.setenv(key, str(tmp_path / "cache" / key.lower()))


def write_todo(out: Path, jobs, modes=None, **settings):
    s = run.Settings(out=str(out), cpu_small=True, ours_module="bench_fakes", run_id="test", **settings)
    todo = out / "todo.json"
    todo.write_text(json.dumps({"settings": run.asdict(s), "jobs": jobs, "started_cases": []}))
    return todo


def rows_by_key(out: Path):
    return {(r["id"], r["impl"]): r for r in run.load_rows(out / run.RESULTS)}


# ---- pieces ---------------------------------------------------------------------------


def test_rel_l2():
    a = torch.tensor([3.0, 4.0])
    assert run.rel_l2(a, a) == 0
    assert run.rel_l2(a * 1.1, a) == pytest.approx(0.1)
    assert run.rel_l2((a, a * 2), (a, a)) == pytest.approx(1.0)  # the worst output counts
    assert run.rel_l2(torch.tensor([float("nan"), 4.0]), a) == math.inf
    assert run.rel_l2(torch.tensor([float("inf"), 4.0]), a) == math.inf
    assert run.rel_l2(a[:1], a) == math.inf
    assert run.rel_l2((a,), (a, a)) == math.inf
    assert run.rel_l2(torch.zeros(2), torch.zeros(2)) == 0
    assert run.rel_l2(a.half(), a) == 0


def test_rotation_count():
    l2 = timing.L2_BYTES
    assert timing.rotation_count(l2) == 1
    assert timing.rotation_count(2 * l2) == 1
    assert timing.rotation_count(l2 // 2) == 6
    assert timing.rotation_count(l2 - 1) == 4
    assert timing.rotation_count(1000) == 32
    # every general config at batch 16 has ~34-101 MB of inputs: rotated only where under the L2
    sizes = {c.id: c.input_bytes() for c in cases(["general"])}
    assert all((timing.rotation_count(b) > 1) == (b < l2) for b in sizes.values())


def test_cpu_time_is_a_median_of_real_calls():
    calls = []

    def fn(x):
        calls.append(x)
        time.sleep(0.002)

    t = timing.cpu_time(fn, [(1,), (2,)], budget_s=0.05, min_reps=3, max_reps=5)
    assert 0.0015 < t < 0.05
    assert 4 <= len(calls) <= 6 and set(calls) == {1, 2}


# ---- the worker, in-process --------------------------------------------------------------


def test_worker_rows_for_every_outcome(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_FAKE_MODES", json.dumps({
        "*": "good", "lora": "wrong", "gated_mlp": "nan", "ngpt_update": "missing", "layernorm_gemm": "error"}))
    jobs = [{"id": f"{w}/small", "impl": i}
            for w in ("rmsnorm_gated_mlp", "lora", "gated_mlp", "ngpt_update", "layernorm_gemm")
            for i in ("eager", "ours")]
    jobs += [{"id": "attention_decode/small", "impl": i} for i in ("eager", "sdpa_flash", "ours")]
    jobs += [{"id": "mhc_decode/small", "impl": "ours"}]
    assert run.worker_main(tmp_path, write_todo(tmp_path, jobs)) == 0
    rows = rows_by_key(tmp_path)
    assert len(rows) == len(jobs)
    for r in rows.values():
        assert ROW_KEYS <= set(r), set(ROW_KEYS) - set(r)
        assert r["device"] == "cpu" and r["schema"] == run.SCHEMA
        assert r["floor"]["floor_s"] > 0 and r["wall_s"] >= 0
    for w in ("rmsnorm_gated_mlp", "lora", "gated_mlp", "ngpt_update", "layernorm_gemm", "attention_decode"):
        eager = rows[(f"{w}/small", "eager")]
        assert eager["status"] == "ok" and eager["correct"] is True and eager["do_bench_s"] > 0

    good = rows[("rmsnorm_gated_mlp/small", "ours")]
    assert good["status"] == "ok" and good["correct"] is True
    assert 0 < good["rel_err"] < 1e-2            # float32 then fp16: close to eager, not bitwise
    assert good["do_bench_s"] > 0 and good["gpu_s"] is None
    assert good["ours"]["report"]["search"]["egraph"]["enodes"] == 1234
    assert (tmp_path / "kernels" / "rmsnorm_gated_mlp-small.py").exists()
    assert rows[("mhc_decode/small", "ours")]["status"] == "ok"

    wrong = rows[("lora/small", "ours")]
    assert wrong["status"] == "wrong" and wrong["correct"] is False
    assert wrong["rel_err"] == pytest.approx(0.1, rel=0.05)
    assert wrong["do_bench_s"] > 0   # still timed, shown as invalid
    nan = rows[("gated_mlp/small", "ours")]
    assert nan["status"] == "wrong" and nan["rel_err"] is None and "NaN" in nan["reason"]
    missing = rows[("ngpt_update/small", "ours")]
    assert missing["status"] == "not_available" and "MissingPieceError" in missing["reason"]
    error = rows[("layernorm_gemm/small", "ours")]
    assert error["status"] == "failed" and "fake optimizer failure" in error["reason"]
    assert error["setup_s"] is not None and error["do_bench_s"] is None
    assert "Traceback" in error["trace"]

    sdpa = rows[("attention_decode/small", "sdpa_flash")]
    assert sdpa["status"] == "ok" and sdpa["rel_err"] < 1e-2


def test_worker_without_the_package_still_measures_baselines(tmp_path):
    jobs = [{"id": "lora/small", "impl": "eager"}, {"id": "lora/small", "impl": "ours"},
            {"id": "gated_mlp/small", "impl": "ours"}]
    todo = write_todo(tmp_path, jobs)
    plan = json.loads(todo.read_text())
    plan["settings"]["ours_module"] = "no_such_package_for_bench"
    todo.write_text(json.dumps(plan))
    assert run.worker_main(tmp_path, todo) == 0
    rows = rows_by_key(tmp_path)
    assert rows[("lora/small", "eager")]["status"] == "ok"
    for key in (("lora/small", "ours"), ("gated_mlp/small", "ours")):
        assert rows[key]["status"] == "not_available"
        assert "no_such_package_for_bench" in rows[key]["reason"]


def test_worker_starts_no_new_config_after_the_deadline(tmp_path):
    jobs = [{"id": "lora/small", "impl": "eager"}, {"id": "lora/small", "impl": "ours"}]
    todo = write_todo(tmp_path, jobs, deadline=time.time() - 1)
    assert run.worker_main(tmp_path, todo) == 0
    assert run.load_rows(tmp_path / run.RESULTS) == []
    events = [json.loads(line) for line in (tmp_path / run.EVENTS).read_text().splitlines()]
    assert events[-1]["event"] == "budget"
    # A config already begun is finished, deadline or not.
    plan = json.loads(todo.read_text())
    plan["started_cases"] = ["lora/small"]
    todo.write_text(json.dumps(plan))
    assert run.worker_main(tmp_path, todo) == 0
    assert len(run.load_rows(tmp_path / run.RESULTS)) == 2


# ---- the command ---------------------------------------------------------------------------


def test_dry_run_plans_every_config(tmp_path, cache_env, capsys):
    assert run.main(["--out", str(tmp_path), "--dry-run", "--export", str(tmp_path / "export")]) == 0
    rows = run.load_rows(tmp_path / run.RESULTS)
    n_cases = len(cases())
    sdpa = sum(1 for c in cases() if c.workload.sdpa)
    assert len(rows) == 3 * n_cases + sdpa
    assert {r["status"] for r in rows} == {"dry_run"}
    assert all(any(n.startswith("outputs [") for n in r["notes"]) for r in rows)
    plan = json.loads((tmp_path / run.PLAN).read_text())
    assert len(plan["jobs"]) == len(rows)
    md = next(tmp_path.glob("dry-run-*.md")).read_text()
    assert "attention_prefill/b8" in md and "## Not run" in md
    assert json.loads(next(tmp_path.glob("dry-run-*.json")).read_text())["rows"]
    exported = sorted(p.name for p in (tmp_path / "export").iterdir())
    assert "results.jsonl" in exported and "logs-kernels.tar.gz" in exported
    assert any(n.endswith(".md") for n in exported) and len(exported) <= 8


def test_bad_arguments(tmp_path, cache_env, capsys):
    assert run.main(["--out", str(tmp_path), "--dry-run", "--impls", "eager,fast"]) == 2
    assert "unknown implementation" in capsys.readouterr().err
    assert run.main(["--out", str(tmp_path), "--dry-run", "--only", "lorra"]) == 2
    assert "no workload" in capsys.readouterr().err
    assert run.main(["--out", str(tmp_path), "--dry-run", "--only", "lora", "--configs", "b3"]) == 2


def bench_cmd(out: Path, *extra, modes: dict) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["BENCH_FAKE_MODES"] = json.dumps(modes)
    for key in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "EQIFORGE_CACHE_DIR"):
        env.pop(key, None)
    return subprocess.run([sys.executable, "-m", "bench.run", "--out", str(out), "--cpu-small",
                           "--ours-module", "bench_fakes", *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_a_crash_and_a_hang_do_not_stop_the_others_and_resume_retries_them(tmp_path, cache_env):
    only = ["--only", "lora,gated_mlp,rmsnorm_gated_mlp", "--impls", "eager,ours"]
    r = bench_cmd(tmp_path, *only, "--job-timeout-s", "8",
                  modes={"lora": "crash", "gated_mlp": "hang", "*": "good"})
    assert r.returncode == 0, r.stdout + r.stderr
    rows = rows_by_key(tmp_path)
    assert rows[("lora/small", "ours")]["status"] == "crashed"
    assert "status 7" in rows[("lora/small", "ours")]["reason"]
    assert rows[("gated_mlp/small", "ours")]["status"] == "timeout"
    # the jobs after the crash and the hang ran, in fresh workers
    assert rows[("gated_mlp/small", "eager")]["status"] == "ok"
    assert rows[("rmsnorm_gated_mlp/small", "eager")]["status"] == "ok"
    assert rows[("rmsnorm_gated_mlp/small", "ours")]["status"] == "ok"
    assert len(list((tmp_path / "logs").glob("worker-*.log"))) == 2
    md = next(tmp_path.glob("cpu-*.md")).read_text()
    assert "crashed" in md and "timeout" in md
    lines_before = len((tmp_path / run.RESULTS).read_text().splitlines())

    # --resume alone: everything has a final row, nothing runs (no worker is started)
    assert run.main(["--out", str(tmp_path), "--cpu-small", "--ours-module", "bench_fakes", "--resume",
                     "--no-report", *only]) == 0
    assert len((tmp_path / run.RESULTS).read_text().splitlines()) == lines_before

    # --retry-failed runs the crashed and timed-out rows again, and only them
    r = bench_cmd(tmp_path, *only, "--resume", "--retry-failed", modes={"*": "good"})
    assert r.returncode == 0, r.stdout + r.stderr
    all_rows = run.load_rows(tmp_path / run.RESULTS)
    assert len(all_rows) == lines_before + 2
    rows = rows_by_key(tmp_path)
    assert rows[("lora/small", "ours")]["status"] == "ok"
    assert rows[("gated_mlp/small", "ours")]["status"] == "ok"
    assert sum(1 for r in all_rows if r["impl"] == "eager") == 3


def test_a_new_run_keeps_the_old_results(tmp_path, cache_env):
    (tmp_path / run.RESULTS).write_text('{"id": "lora/small", "impl": "eager", "status": "ok"}\n')
    assert run.main(["--out", str(tmp_path), "--dry-run", "--only", "lora/b1", "--no-report"]) == 0
    old = list(tmp_path.glob("results-*.jsonl.old"))
    assert len(old) == 1 and "lora/small" in old[0].read_text()
    assert {r["status"] for r in run.load_rows(tmp_path / run.RESULTS)} == {"dry_run"}


def test_load_rows_skips_a_torn_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a", "impl": "eager"}\n\n{"id": "b", "impl": "ea')
    assert run.load_rows(path) == [{"id": "a", "impl": "eager"}]
    assert run.load_rows(tmp_path / "missing.jsonl") == []


def test_all_workloads_have_small_cpu_rows(tmp_path, monkeypatch):
    """Every workload's small config through eager and ours (stand-in) on the CPU."""
    monkeypatch.setenv("BENCH_FAKE_MODES", json.dumps({"*": "good"}))
    jobs = [{"id": f"{name}/small", "impl": i} for name in WORKLOADS for i in ("eager", "ours")]
    assert run.worker_main(tmp_path, write_todo(tmp_path, jobs)) == 0
    rows = run.load_rows(tmp_path / run.RESULTS)
    assert len(rows) == len(jobs)
    bad = [(r["id"], r["impl"], r["status"], r["reason"]) for r in rows if r["status"] != "ok"]
    assert not bad


def test_a_spent_budget_starts_nothing_and_still_reports(tmp_path, cache_env, capsys):
    assert run.main(["--out", str(tmp_path), "--cpu-small", "--only", "lora,gated_mlp", "--impls", "eager",
                     "--budget-s", "1e-6"]) == 0
    assert "2 job(s) not started (budget reached)" in capsys.readouterr().out
    assert run.load_rows(tmp_path / run.RESULTS) == []
    md = next(tmp_path.glob("*.md")).read_text()
    assert "## Not run" in md and "lora/small eager" in md
