"""Cache safety end to end: eqiforge.optimize (real search, Triton's
interpreter) in several processes sharing one cache folder, and entries that
are damaged, tampered with or written by another version between runs.

Whatever is in the folder, optimize never returns a wrong kernel and never
crashes; an entry it does not use is reported with a CacheWarning. The
cache's own unit tests (layouts, truncations, atomic writes, concurrent
writers of bare entries) are in test_cache.py.
"""

import json
import os
import random
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import eqiforge.api as api
from eqiforge.runtime import search
from eqiforge.runtime.cache import Cache, CacheWarning, read_entry

pytestmark = [
    pytest.mark.skipif(not search.has_extraction(), reason="extraction (eqiforge-opt extract) is not in this build"),
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
    pytest.mark.filterwarnings("ignore::eqiforge.api.InterpreterWarning"),
]

LIMITS = dict(top_k=2, search_time_s=10, extract_time_s=20)

# One optimize of relu(x @ w) in a process of its own: prints whether it came
# from the cache, its largest error against eager on fresh inputs, and the
# CacheWarnings it gave.
WORKER = textwrap.dedent("""
    import json, sys, warnings
    import torch
    import eqiforge.api as api
    from eqiforge.runtime.cache import CacheWarning

    warnings.simplefilter("ignore", api.InterpreterWarning)

    def relu_matmul(x, w):
        return torch.relu(x @ w)

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(5, 7, generator=g), torch.randn(7, 6, generator=g)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", CacheWarning)
        fast = api.optimize(relu_matmul, x, w, cache_dir=sys.argv[1], **json.loads(sys.argv[2]))
    err = 0.0
    for seed in (1, 2):
        g = torch.Generator().manual_seed(seed)
        x, w = torch.randn(5, 7, generator=g), torch.randn(7, 6, generator=g)
        err = max(err, (fast(x, w) - relu_matmul(x, w)).abs().max().item())
    print(json.dumps({"from_cache": fast.report.from_cache, "error": err,
                      "warnings": [str(r.message) for r in record if issubclass(r.category, CacheWarning)]}))
""")


def relu_matmul(x, w):
    return torch.relu(x @ w)


def inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(5, 7, generator=g), torch.randn(7, 6, generator=g)


def start_worker(cache_dir, log_dir, name):
    out = open(log_dir / f"{name}.out", "w")
    err = open(log_dir / f"{name}.err", "w")
    with out, err:
        return subprocess.Popen([sys.executable, "-c", WORKER, str(cache_dir), json.dumps(LIMITS)],
                                stdout=out, stderr=err)


def result_of(proc, log_dir, name) -> dict:
    assert proc.wait(timeout=300) == 0, (log_dir / f"{name}.err").read_text()[-3000:]
    return json.loads((log_dir / f"{name}.out").read_text().strip().splitlines()[-1])


def run_worker(cache_dir, log_dir, name) -> dict:
    return result_of(start_worker(cache_dir, log_dir, name), log_dir, name)


def entry_path(cache_dir):
    (path,) = list(cache_dir.glob("*/*.json"))
    return path


def assert_correct(fast):
    for seed in (5, 6):
        x, w = inputs(seed)
        torch.testing.assert_close(fast(x, w), relu_matmul(x, w))


def optimize_quietly(cache_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        return api.optimize(relu_matmul, *inputs(), cache_dir=cache_dir, **LIMITS)


def no_temporary_files(folder):
    return [p for p in folder.rglob("*") if p.name.startswith(".tmp-") or p.suffix == ".tmp"]


def test_four_processes_optimize_into_one_cache_at_once(tmp_path):
    cache_dir, logs = tmp_path / "cache", tmp_path / "logs"
    logs.mkdir()
    procs = [start_worker(cache_dir, logs, f"w{i}") for i in range(4)]
    results = [result_of(p, logs, f"w{i}") for i, p in enumerate(procs)]
    for r in results:
        assert r["error"] < 1e-5 and not r["warnings"], r
    # One valid entry, nothing half-written left behind, and it serves the next run.
    entry = read_entry(entry_path(cache_dir))
    assert not isinstance(entry, str), entry
    assert not no_temporary_files(cache_dir)
    assert len(list((cache_dir / "modules").glob("*.py"))) >= 1
    again = optimize_quietly(cache_dir)
    assert again.report.from_cache
    assert_correct(again)


def test_tampered_kernel_source_is_detected_and_never_run(tmp_path):
    api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    path = entry_path(tmp_path)
    text = path.read_text()
    # A kernel that computes something else: min(x @ w, 0) for relu.
    assert "tl.maximum(" in text
    path.write_text(text.replace("tl.maximum(", "tl.minimum("))
    with pytest.warns(CacheWarning, match="checksum mismatch"):
        fast = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    assert not fast.report.from_cache and "tl.minimum(" not in fast.source
    assert_correct(fast)
    again = optimize_quietly(tmp_path)  # the entry was rewritten whole
    assert again.report.from_cache
    assert_correct(again)


def test_tampered_module_file_is_rewritten_from_the_entry(tmp_path):
    # The imported module lives in a file next to the entries; a process that
    # finds it changed writes the entry's (checksummed) source back first.
    # Both runs are processes of their own: a process imports a module once
    # and writes its file only then.
    cache_dir, logs = tmp_path / "cache", tmp_path / "logs"
    logs.mkdir()
    first = run_worker(cache_dir, logs, "first")
    assert not first["from_cache"] and first["error"] < 1e-5
    source = read_entry(entry_path(cache_dir)).payload["source"]
    modules = [p for p in (cache_dir / "modules").glob("*.py") if p.read_text() == source]
    assert modules
    for m in modules:
        m.write_text(source.replace("tl.maximum(", "tl.minimum("))
    second = run_worker(cache_dir, logs, "second")
    assert second["from_cache"] and second["error"] < 1e-5, second
    assert all(m.read_text() == source for m in modules)


def test_entry_of_another_version_is_stale_and_replaced(tmp_path):
    api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    path = entry_path(tmp_path)
    entry = read_entry(path)
    old_key = {**entry.key, "versions": {**entry.key["versions"], "eqiforge": "0.0.1", "eqiforge_core": "0" * 16}}
    # What an older eqiforge left: its own layout, a kernel that is wrong today.
    old_payload = {**entry.payload, "source": entry.payload["source"].replace("tl.maximum(", "tl.minimum(")}
    assert Cache(tmp_path).store(old_key, old_payload) == path
    with pytest.warns(CacheWarning, match="stale") as record:
        fast = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    assert "eqiforge 0.0.1 -> " in str(record[0].message)
    assert not fast.report.from_cache
    assert_correct(fast)
    assert optimize_quietly(tmp_path).report.from_cache


@pytest.mark.parametrize("damage", ["random-bytes", "truncated", "empty", "not-json-utf8"])
def test_damaged_entry_is_ignored_and_replaced(tmp_path, damage):
    api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    path = entry_path(tmp_path)
    whole = path.read_bytes()
    rng = random.Random(damage)
    path.write_bytes({
        "random-bytes": bytes(rng.randrange(256) for _ in range(len(whole))),
        "truncated": whole[: rng.randrange(1, len(whole))],
        "empty": b"",
        "not-json-utf8": b"\xff\xfe" + whole,
    }[damage])
    with pytest.warns(CacheWarning, match="corrupt"):
        fast = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    assert not fast.report.from_cache
    assert_correct(fast)
    assert optimize_quietly(tmp_path).report.from_cache


def test_entry_with_launch_parameters_forward_does_not_take_is_not_used(tmp_path):
    # A well-formed entry (valid checksum, current versions) whose parameters
    # the module's forward does not accept: used, it would fail at the first
    # call instead of at optimize.
    api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    entry = read_entry(entry_path(tmp_path))
    Cache(tmp_path).store(entry.key, {**entry.payload, "params": {**entry.payload["params"], "block_q0": 16}})
    with pytest.warns(CacheWarning, match="block_q0 are not arguments"):
        fast = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path, **LIMITS)
    assert not fast.report.from_cache
    assert_correct(fast)


def test_unwritable_cache_folder_still_optimizes(tmp_path):
    if os.geteuid() == 0:
        # root writes through permissions: a file where the folder should be instead.
        blocker = tmp_path / "cache"
        blocker.write_text("not a folder")
    else:
        blocker = tmp_path / "cache"
        blocker.mkdir()
        blocker.chmod(0o500)
    with pytest.warns(CacheWarning, match="could not write"):
        fast = api.optimize(relu_matmul, *inputs(), cache_dir=blocker, **LIMITS)
    assert_correct(fast)
