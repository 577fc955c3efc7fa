"""Runs the benchmarks: every selected workload config through each
implementation, one result row at a time.

    python -m bench.run --out DIR [--only NAMES] [--configs LABELS] [--impls LIST]
                        [--budget-s N] [--resume] [--dry-run] [--cpu-small]

Implementations (`--impls`, default all that apply):
  eager          the workload's function in PyTorch eager;
  sdpa_flash     workloads with an SDPA form (attention; sliding-window GQA,
                 its window sliced from the cache): F.scaled_dot_product_attention
                 under the FlashAttention backend;
  torch_compile  torch.compile(mode="max-autotune-no-cudagraphs");
  ours           eqiforge.optimize of the workload's function, through the
                 public API only. If the package or a piece of its pipeline
                 is missing, the row says "not available" with the reason and
                 the baselines are measured all the same.

For each config: fresh random inputs (non-zero; ours is optimized on one set
and checked and timed on others), the output of each implementation checked
against eager (relative L2 error <= 1e-2, NaN fails), two timings (see
bench/timing.py), the physical floor (bench/floors.py) and the gap to it.

Robustness: the jobs run in a worker process. A job that crashes the worker
(a segfault, a CUDA error that poisons the context) or runs past
--job-timeout-s is recorded as such and the worker is restarted for the rest.
Each row is appended to DIR/results.jsonl as soon as it is measured, so a
killed run keeps what it measured; --resume skips the (config, impl) rows
already there. --budget-s stops starting new configs once that many seconds
have passed; --hard-limit-s kills whatever runs at that point. The report
(bench/report.py) is written into DIR at the end, from all rows in the file.

Caches (torch inductor, Triton, eqiforge) live under DIR/cache unless
--cache-dir says otherwise, so later runs with the same DIR compile less.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
IMPLS = ("eager", "sdpa_flash", "torch_compile", "ours")
TOLERANCE = 1e-2
# The note a row carries when one of its timings failed (the report's cells say why).
TIMING_FAILED = {"do_bench_s": "do_bench failed", "gpu_s": "GPU-only time (CUDA graph) failed",
                 "gpu_clean_s": "GPU-only time after a clean flush failed"}
# Rows that a --resume does not run again; --retry-failed runs the RETRYABLE
# ones again too. A "not available" row is never final: the next run may have
# the missing piece.
FINAL = ("ok", "wrong", "failed", "timeout", "crashed")
RETRYABLE = ("wrong", "failed", "timeout", "crashed")
STARTUP_TIMEOUT_S = 300  # imports, CUDA start, warm-up and the ceilings, before the first job
RESULTS = "results.jsonl"
EVENTS = "events.jsonl"
PLAN = "plan.json"
SCHEMA = 1


@dataclass
class Settings:
    """Everything a worker needs to know, written to DIR/plan.json."""

    out: str
    cpu_small: bool = False
    impls: list[str] = field(default_factory=lambda: list(IMPLS))
    seed: int = 0
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    gpu_target_ms: float = 100.0
    ours_module: str = "eqiforge"
    ours_budget_s: float = 20.0
    ours_search_s: float = 30.0
    ours_opts: dict = field(default_factory=dict)
    compile_mode: str = "max-autotune-no-cudagraphs"
    cache_dir: str = ""
    run_id: str = ""
    deadline: float = 0.0      # epoch seconds after which no new config starts; 0: none
    measure_ceilings: bool = True


# ---- small helpers ----------------------------------------------------------------------


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def one_line(e: BaseException, limit: int = 400) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(e).__name__}: {first}"[:limit]


def append_row(out: Path, row: dict) -> None:
    with open(out / RESULTS, "a") as f:
        f.write(json.dumps(row, default=_json_default) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _json_default(o: Any):
    if isinstance(o, (set, tuple)):
        return list(o)
    if hasattr(o, "to_json"):
        return o.to_json()
    return str(o)


def load_rows(path: Path) -> list[dict]:
    """The rows of a results file; a line that does not parse (a run killed
    mid-write) is skipped."""
    rows = []
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def case_seed(seed: int, case_id: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(case_id.encode())) % (2**31)


def versions() -> dict:
    import platform

    import torch

    v = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import triton

        v["triton"] = triton.__version__
    except Exception:  # noqa: BLE001 -- no Triton: CPU checks
        v["triton"] = None
    try:
        from importlib.metadata import version

        v["eqiforge"] = version("eqiforge")
    except Exception:  # noqa: BLE001
        v["eqiforge"] = None
    return v


def base_row(case, impl: str, settings: Settings, device_name: str) -> dict:
    from .floors import floor_of

    fl = floor_of(case.workload.name, case.params)
    return {
        "schema": SCHEMA,
        "run": settings.run_id,
        "time": now_iso(),
        "id": case.id,
        "workload": case.workload.name,
        "family": case.workload.family,
        "title": case.workload.title,
        "config": case.config.label,
        "params": dict(case.params),
        "impl": impl,
        "status": None,
        "reason": None,
        "device": device_name,
        "dtype": "float16",
        "input_bytes": case.input_bytes(),
        "floor": fl.to_json(),
        "rel_err": None,
        "correct": None,
        "do_bench_s": None,
        "gpu_s": None,
        "gpu_clean_s": None,
        "gpu_one_stream_s": None,   # ours: GPU-only with every kernel on one stream (no side streams)
        "rel_err_graph": None,      # ours: rel. L2 error of a CUDA graph replay (side streams) against eager
        "gpu_reps": None,
        "gap_do_bench": None,
        "gap_gpu": None,
        "setup_s": None,
        "wall_s": None,
        "rotating_sets": None,
        "notes": [],
    }


def rel_l2(out, ref) -> float:
    """max over outputs of ||out - ref|| / ||ref||, in float64; inf for NaN,
    inf or a shape mismatch."""
    import torch

    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    if len(outs) != len(refs):
        return float("inf")
    worst = 0.0
    for o, r in zip(outs, refs):
        if not isinstance(o, torch.Tensor) or tuple(o.shape) != tuple(r.shape):
            return float("inf")
        o64, r64 = o.detach().to(torch.float64), r.detach().to(torch.float64)
        if not torch.isfinite(o64).all():
            return float("inf")
        denom = torch.linalg.vector_norm(r64).item()
        num = torch.linalg.vector_norm(o64 - r64).item()
        worst = max(worst, num / denom if denom > 0 else (0.0 if num == 0 else float("inf")))
    return worst


def all_finite(out) -> bool:
    import torch

    outs = out if isinstance(out, (tuple, list)) else (out,)
    return all(isinstance(o, torch.Tensor) and bool(torch.isfinite(o).all()) for o in outs)


# ---- the implementations ----------------------------------------------------------------


class NotAvailable(Exception):
    """The implementation cannot run here (missing package or piece); not a failure of the workload."""


def load_optimize(module_name: str) -> Callable:
    """eqiforge.optimize (or `optimize` of the module named), imported lazily."""
    import importlib

    try:
        mod = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 -- any import failure means: not available
        raise NotAvailable(f"import {module_name} failed: {one_line(e)}") from e
    fn = getattr(mod, "optimize", None)
    if fn is None:
        try:
            fn = importlib.import_module(module_name + ".api").optimize
        except Exception as e:  # noqa: BLE001
            raise NotAvailable(f"{module_name} has no optimize ({one_line(e)})") from e
    return fn


def _is_missing_piece(e: BaseException) -> bool:
    return type(e).__name__ in ("MissingPieceError", "ModuleNotFoundError", "ImportError")


def jsonable(x: Any, depth: int = 0) -> Any:
    if depth > 6:
        return str(x)
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if x == x and abs(x) != float("inf") else None
    if isinstance(x, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [jsonable(v, depth + 1) for v in x]
    if hasattr(x, "to_json"):
        try:
            return jsonable(x.to_json(), depth + 1)
        except Exception:  # noqa: BLE001
            pass
    if hasattr(x, "__dict__"):
        return {k: jsonable(v, depth + 1) for k, v in vars(x).items() if not k.startswith("_")}
    return str(x)


def ours_info(program: Any) -> dict:
    """What the optimized program says about itself: its report (kernels,
    search and tuning statistics), as far as it exposes one."""
    info: dict[str, Any] = {}
    report = getattr(program, "report", None)
    if report is not None:
        info["report"] = jsonable(report)
    for attr in ("params", "interpret"):
        if hasattr(program, attr):
            info[attr] = jsonable(getattr(program, attr))
    return info


# ---- the worker: one job = one config through one implementation -------------------------


class Worker:
    def __init__(self, settings: Settings):
        import torch

        self.settings = settings
        self.out = Path(settings.out)
        self.cuda = not settings.cpu_small
        if self.cuda and not torch.cuda.is_available():
            raise SystemExit("bench.run: no GPU found; use --cpu-small for the CPU checks or --dry-run")
        self.device = torch.device("cuda" if self.cuda else "cpu")
        self.device_name = torch.cuda.get_device_name(self.device) if self.cuda else "cpu"
        self.flusher = None
        self._optimize: Callable | None = None
        self._optimize_error: str | None = None
        self.versions = versions()

    # -- shared per job --

    def warm_up(self) -> None:
        """Clocks up and libraries loaded before the first timing."""
        import torch

        if not self.cuda:
            return
        from .timing import L2Flusher

        self.flusher = L2Flusher(self.device)
        a = torch.randn(4096, 4096, device=self.device, dtype=torch.float16)
        end = time.time() + 0.5
        while time.time() < end:
            a @ a
        torch.cuda.synchronize(self.device)

    def optimize_fn(self) -> Callable:
        if self._optimize is None and self._optimize_error is None:
            try:
                self._optimize = load_optimize(self.settings.ours_module)
            except NotAvailable as e:
                self._optimize_error = str(e)
        if self._optimize is None:
            raise NotAvailable(self._optimize_error)
        return self._optimize

    def time_it(self, fn: Callable, arg_sets: list[tuple],
                context=None) -> tuple[float | None, float | None, float | None, int | None, list[str]]:
        """(do_bench seconds, GPU-only seconds, GPU-only seconds after a clean
        flush, GPU-only replays, notes)."""
        from . import timing

        notes: list[str] = []
        if not self.cuda:
            t = timing.cpu_time(fn, arg_sets, context=context)
            return t, None, None, None, ["CPU: wall-clock median, no GPU-only time"]
        t_bench = reps = None
        try:
            t_bench = timing.do_bench_time(fn, arg_sets, self.settings.warmup_ms, self.settings.rep_ms, context)
        except Exception as e:  # noqa: BLE001 -- reported in the row
            notes.append(f"{TIMING_FAILED['do_bench_s']}: {one_line(e)}")
        gpu: dict[str, float] = {}
        for key, clean in (("gpu_s", False), ("gpu_clean_s", True)):
            try:
                gpu[key], n = timing.gpu_only_time(fn, arg_sets[0], self.flusher, self.settings.gpu_target_ms,
                                                   context=context, clean=clean)
            except Exception as e:  # noqa: BLE001
                notes.append(f"{TIMING_FAILED[key]}: {one_line(e)}")
                break  # a call that cannot be captured once cannot be the second time either
            reps = reps or n
        return t_bench, gpu.get("gpu_s"), gpu.get("gpu_clean_s"), reps, notes

    def one_stream_time(self, run: Callable, args: tuple, context, notes: list[str]) -> float | None:
        """GPU-only seconds (write flush) of the same program with every kernel
        on one stream: what side streams in the captured graph are worth."""
        import torch
        from eqiforge.runtime import launch

        from . import timing

        before, launch.SIDE_STREAMS = launch.SIDE_STREAMS, False
        try:
            with torch.no_grad():
                return timing.gpu_only_time(run, args, self.flusher, self.settings.gpu_target_ms, context=context)[0]
        except Exception as e:  # noqa: BLE001 -- reported in the row
            notes.append(f"GPU-only time on one stream failed: {one_line(e)}")
            return None
        finally:
            launch.SIDE_STREAMS = before

    def graph_error(self, run: Callable, args: tuple, ref, context, notes: list[str]) -> float | None:
        """Relative L2 error against eager of one replay of run(*args) captured
        as a CUDA graph (eqiforge's GraphRunner: warm-up calls, then the capture)."""
        import torch
        from eqiforge.runtime.launch import GraphRunner

        try:
            with (context() if context else _null()), torch.no_grad():
                graph = GraphRunner(lambda *a: (run(*a),), list(args))
                (out,) = graph(*args)
                self._sync()
            return rel_l2(out, ref)
        except Exception as e:  # noqa: BLE001 -- reported in the row
            notes.append(f"the CUDA graph replay's values could not be checked: {one_line(e)}")
            return None

    # -- one job --

    def run_job(self, case, impl: str) -> dict:
        import torch

        from . import timing
        from .workloads import make_inputs

        s = self.settings
        row = base_row(case, impl, s, self.device_name)
        row["versions"] = self.versions
        began = time.perf_counter()
        seed = case_seed(s.seed, case.id)
        dtype = torch.float16
        fn = case.fn()
        context = None
        setup_began = None
        try:
            if impl == "sdpa_flash" and case.workload.sdpa is None:
                raise NotAvailable("no SDPA form for this workload")
            check = make_inputs(case, self.device, dtype, seed + 2)
            with torch.no_grad():
                ref = fn(*check)
            sets = [check]
            n_sets = timing.rotation_count(case.input_bytes()) if self.cuda else 1
            for i in range(1, n_sets):
                sets.append(make_inputs(case, self.device, dtype, seed + 3 + i))
            row["rotating_sets"] = n_sets

            setup_began = time.perf_counter()
            if impl == "eager":
                run = fn
            elif impl == "sdpa_flash":
                run = case.sdpa_fn()
                if self.cuda:
                    from torch.nn.attention import SDPBackend, sdpa_kernel

                    context = functools.partial(sdpa_kernel, SDPBackend.FLASH_ATTENTION)
                else:
                    row["notes"].append("CPU: SDPA's default backend (FlashAttention is GPU-only)")
            elif impl == "torch_compile":
                import torch._dynamo

                torch._dynamo.reset()
                run = torch.compile(fn, mode=s.compile_mode, dynamic=False)
                with torch.no_grad():
                    run(*check)  # compiles (and autotunes) here, timed as setup
                self._sync()
            elif impl == "ours":
                optimize = self.optimize_fn()
                example = make_inputs(case, self.device, dtype, seed + 1)
                opts = {"budget_s": s.ours_budget_s, "search_time_s": s.ours_search_s, "baselines": False,
                        "verbose": 1}
                if s.cache_dir:
                    opts["cache_dir"] = str(Path(s.cache_dir) / "eqiforge")
                opts.update(s.ours_opts)
                try:
                    run = optimize(fn, *example, **opts)
                except Exception as e:  # noqa: BLE001
                    if _is_missing_piece(e):
                        raise NotAvailable(one_line(e)) from e
                    raise
                self._sync()
                row["ours"] = ours_info(run)
                if hasattr(run, "save"):
                    try:
                        kdir = self.out / "kernels"
                        kdir.mkdir(exist_ok=True)
                        run.save(kdir / f"{case.workload.name}-{case.config.label}.py")
                    except Exception as e:  # noqa: BLE001
                        row["notes"].append(f"could not save the kernels: {one_line(e)}")
            else:
                raise ValueError(f"unknown implementation {impl!r}")
            row["setup_s"] = time.perf_counter() - setup_began

            with torch.no_grad(), (context() if context else _null()):
                out = run(*check)
            self._sync()
            if impl == "eager":
                ok = all_finite(out)
                row["correct"] = ok
                if not ok:
                    row["status"], row["reason"] = "wrong", "eager's output has NaN or inf on these inputs"
            else:
                err = rel_l2(out, ref)
                row["rel_err"] = err if err != float("inf") else None
                row["correct"] = err <= TOLERANCE
                if not row["correct"]:
                    row["status"] = "wrong"
                    row["reason"] = ("output has NaN/inf or the wrong shape" if err == float("inf")
                                     else f"relative L2 error {err:.3g} > {TOLERANCE:g} against eager")
            del out

            with torch.no_grad():
                t_bench, t_gpu, t_clean, reps, notes = self.time_it(run, sets, context)
            row["do_bench_s"], row["gpu_s"], row["gpu_clean_s"], row["gpu_reps"] = t_bench, t_gpu, t_clean, reps
            row["notes"] += notes
            if impl == "ours" and t_gpu is not None and self.cuda:
                row["gpu_one_stream_s"] = self.one_stream_time(run, sets[0], context, row["notes"])
                # GPU-only times replay a captured graph, where the lean path
                # runs independent kernels on side streams: check its values too.
                err = self.graph_error(run, check, ref, context, row["notes"])
                row["rel_err_graph"] = err if err != float("inf") else None
                if err is not None and not err <= TOLERANCE and row["status"] is None:
                    row["status"] = "wrong"
                    row["reason"] = f"relative L2 error {err:.3g} > {TOLERANCE:g} against eager in a CUDA graph replay"
            fl = row["floor"]["floor_s"]
            row["gap_do_bench"] = t_bench / fl if t_bench else None
            row["gap_gpu"] = t_gpu / fl if t_gpu else None
            if row["status"] is None:
                row["status"] = "ok" if t_bench is not None or t_gpu is not None else "failed"
                if row["status"] == "failed":
                    row["reason"] = "; ".join(notes) or "no timing"
        except NotAvailable as e:
            row["status"], row["reason"] = "not_available", str(e)
        except Exception as e:  # noqa: BLE001 -- one failing job never stops the others
            row["status"], row["reason"] = "failed", one_line(e)
            row["trace"] = traceback.format_exc()[-3000:]
        if setup_began is not None and row["setup_s"] is None:
            row["setup_s"] = time.perf_counter() - setup_began  # time spent compiling or optimizing until it failed
        row["wall_s"] = time.perf_counter() - began
        return row

    def _sync(self) -> None:
        import torch

        if self.cuda:
            torch.cuda.synchronize(self.device)

    def context_is_sane(self) -> str | None:
        """None if the GPU still works after a job, else the error (a CUDA
        error poisons the context: later jobs must run in a fresh process)."""
        import torch

        if not self.cuda:
            return None
        try:
            torch.cuda.synchronize(self.device)
            torch.ones(1, device=self.device).add_(1).item()
            return None
        except Exception as e:  # noqa: BLE001
            return one_line(e)

    def ceilings_row(self) -> dict:
        from .timing import measure_ceilings

        row = {"schema": SCHEMA, "run": self.settings.run_id, "time": now_iso(), "id": "_ceilings",
               "impl": "ceilings", "device": self.device_name, "versions": self.versions}
        try:
            row.update(measure_ceilings(self.device))
            row["status"] = "ok"
        except Exception as e:  # noqa: BLE001
            row["status"], row["reason"] = "failed", one_line(e)
        return row


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _event(out: Path, **fields) -> None:
    with open(out / EVENTS, "a") as f:
        f.write(json.dumps({"t": time.time(), "pid": os.getpid(), **fields}) + "\n")
        f.flush()


def summary_line(row: dict) -> str:
    def us(t):
        return f"{t * 1e6:.1f} us" if t else "-"

    parts = [f"{row['id']:34s} {row['impl']:13s} {row['status']:13s}"]
    if row.get("do_bench_s") or row.get("gpu_s"):
        parts.append(f"do_bench {us(row.get('do_bench_s'))}, gpu {us(row.get('gpu_s'))}, "
                     f"gpu clean {us(row.get('gpu_clean_s'))}")
    if row.get("gpu_one_stream_s"):
        parts.append(f"gpu one stream {us(row['gpu_one_stream_s'])}")
    if row.get("rel_err") is not None:
        parts.append(f"err {row['rel_err']:.1e}")
    if row.get("setup_s"):
        parts.append(f"setup {row['setup_s']:.1f} s")
    if row.get("wall_s"):
        parts.append(f"wall {row['wall_s']:.1f} s")
    if row.get("reason"):
        parts.append(f"({row['reason'][:160]})")
    return "  ".join(parts)


def worker_main(out: Path, todo_file: Path) -> int:
    """Runs the jobs of todo_file in order; exits 0 when done or out of
    budget, 3 when the GPU context broke (the parent starts a new worker)."""
    plan = json.loads(todo_file.read_text())
    settings = Settings(**plan["settings"])
    started_cases = set(plan.get("started_cases", []))
    from .workloads import case_by_id

    worker = Worker(settings)
    worker.warm_up()
    if settings.measure_ceilings and worker.cuda and plan.get("ceilings"):
        append_row(out, worker.ceilings_row())
    for k, job in enumerate(plan["jobs"]):
        if job["id"] not in started_cases and settings.deadline and time.time() >= settings.deadline:
            _event(out, event="budget", job=k, id=job["id"], impl=job["impl"])
            return 0
        started_cases.add(job["id"])
        _event(out, event="start", job=k, id=job["id"], impl=job["impl"])
        row = worker.run_job(case_by_id(job["id"]), job["impl"])
        append_row(out, row)
        _event(out, event="end", job=k, id=job["id"], impl=job["impl"], device=worker.device_name,
               line=summary_line(row))
        broken = worker.context_is_sane()
        if broken:
            _event(out, event="broken", job=k, reason=broken)
            return 3
        import gc

        gc.collect()
        if worker.cuda:
            import torch

            torch.cuda.empty_cache()
    return 0


# ---- the parent: plans, runs workers, keeps going ----------------------------------------


def _read_events(path: Path, offset: int) -> tuple[list[dict], int]:
    if not path.exists():
        return [], offset
    with open(path) as f:
        f.seek(offset)
        data = f.read()
    # Only whole lines; a partial last line is read next time.
    end = data.rfind("\n") + 1
    events = []
    for line in data[:end].splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return events, offset + len(data[:end].encode())


def _tail(path: Path, n: int = 1500) -> str:
    try:
        data = path.read_bytes()[-n:]
        return data.decode(errors="replace").strip()
    except OSError:
        return ""


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


class Parent:
    def __init__(self, args, settings: Settings, cases):
        self.args = args
        self.settings = settings
        self.cases = cases
        self.out = Path(settings.out)
        self.t0 = time.time()
        self.worker_count = 0
        rows = load_rows(self.out / RESULTS)
        self.device_name = next((r["device"] for r in reversed(rows) if r.get("device")), "unknown")

    def failure_row(self, job: dict, status: str, reason: str) -> dict:
        from .workloads import case_by_id

        case = case_by_id(job["id"])
        row = base_row(case, job["impl"], self.settings, self.device_name)
        row.update(status=status, reason=reason, wall_s=job.get("elapsed"))
        return row

    def run(self, jobs: list[dict], started_cases: set[str], want_ceilings: bool) -> None:
        pending = list(jobs)
        fruitless = 0
        while pending or want_ceilings:
            deadline = self.settings.deadline
            if pending and deadline and time.time() >= deadline and pending[0]["id"] not in started_cases:
                print(f"bench.run: {len(pending)} job(s) not started (budget reached); --resume runs them", flush=True)
                return
            self.worker_count += 1
            todo = self.out / f"todo-{self.worker_count}.json"
            todo.write_text(json.dumps({"settings": asdict(self.settings), "jobs": pending,
                                        "started_cases": sorted(started_cases), "ceilings": want_ceilings}))
            want_ceilings = False
            log = self.out / "logs" / f"worker-{self.worker_count}.log"
            log.parent.mkdir(exist_ok=True)
            events_path = self.out / EVENTS
            offset = events_path.stat().st_size if events_path.exists() else 0
            env = dict(os.environ)
            env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
            env.setdefault("PYTHONUNBUFFERED", "1")
            with open(log, "w") as logf:
                cmd = [sys.executable, "-X", "faulthandler", "-m", "bench.run", "--worker", str(todo),
                       "--out", str(self.out)]
                proc = subprocess.Popen(cmd, cwd=str(REPO), env=env, stdout=logf, stderr=subprocess.STDOUT,
                                        start_new_session=True)
                current, started_at, progressed, stop_all, budget_hit = None, None, False, False, False
                launched = time.time()
                while True:
                    events, offset = _read_events(events_path, offset)
                    for ev in events:
                        if ev.get("pid") != proc.pid:
                            continue
                        if ev["event"] == "start":
                            current, started_at = pending[ev["job"]], time.time()
                            started_cases.add(current["id"])
                            progressed = True
                        elif ev["event"] == "end":
                            pending[ev["job"]]["done"] = True
                            print(ev.get("line", ""), flush=True)
                            self.device_name = ev.get("device") or self.device_name
                            current = None
                        elif ev["event"] == "budget":
                            budget_hit = True
                    if proc.poll() is not None and not events:
                        break
                    now = time.time()
                    if not progressed and now - launched > STARTUP_TIMEOUT_S:
                        _kill(proc)
                        print(f"bench.run: the worker did not start a job within {STARTUP_TIMEOUT_S} s; killed",
                              file=sys.stderr, flush=True)
                        break
                    if current is not None and now - started_at > self.args.job_timeout_s:
                        _kill(proc)
                        current["elapsed"] = now - started_at
                        row = self.failure_row(current, "timeout",
                                               f"killed after {self.args.job_timeout_s:g} s (--job-timeout-s)")
                        append_row(self.out, row)
                        print(summary_line(row), flush=True)
                        current["done"] = True
                        current = None
                        break
                    if self.args.hard_limit_s and now - self.t0 > self.args.hard_limit_s:
                        _kill(proc)
                        if current is not None:
                            current["elapsed"] = now - started_at
                            row = self.failure_row(current, "timeout",
                                                   f"killed at the run's hard limit ({self.args.hard_limit_s:g} s)")
                            append_row(self.out, row)
                            print(summary_line(row), flush=True)
                            current["done"] = True
                            current = None
                        stop_all = True
                        break
                    time.sleep(0.2)
            rc = proc.wait()
            if current is not None:
                # The worker died inside a job: that job is the crash.
                current["elapsed"] = time.time() - started_at
                reason = f"the worker exited with status {rc} during this job; log tail: " + \
                    _tail(log, 600).replace("\n", " | ")
                row = self.failure_row(current, "crashed", reason)
                append_row(self.out, row)
                print(summary_line(row), flush=True)
                current["done"] = True
            pending = [j for j in pending if not j.get("done")]
            if stop_all or budget_hit:
                if pending:
                    print(f"bench.run: {len(pending)} job(s) not started "
                          f"({'hard limit' if stop_all else 'budget'} reached); --resume runs them", flush=True)
                return
            if rc != 0 and not progressed:
                fruitless += 1
                if fruitless >= 2:
                    print(f"bench.run: the worker failed twice before any job (exit {rc}); log tail:\n"
                          + _tail(log), file=sys.stderr, flush=True)
                    return
            else:
                fruitless = 0
            if rc == 0 and pending and not budget_hit:
                # A worker that ends cleanly with jobs left said why in its log.
                print("bench.run: the worker stopped early; log tail:\n" + _tail(log), file=sys.stderr, flush=True)
                return


# ---- dry run -----------------------------------------------------------------------------


def dry_run(settings: Settings, jobs: list[dict]) -> None:
    """Rows for every planned job without measuring: floors, and a check of
    each full-size function on meta tensors (shapes only, no memory)."""
    import torch

    from .workloads import case_by_id, make_inputs

    ours_status = None
    if "ours" in settings.impls:
        try:
            load_optimize(settings.ours_module)
            ours_status = "eqiforge.optimize imports"
        except NotAvailable as e:
            ours_status = f"not available: {e}"
    shapes: dict[str, str] = {}
    here = versions()
    for job in jobs:
        case = case_by_id(job["id"])
        row = base_row(case, job["impl"], settings, "dry run")
        row["status"] = "dry_run"
        row["versions"] = here
        if case.id not in shapes:
            try:
                with torch.no_grad():
                    out = case.fn()(*make_inputs(case, "meta"))
                outs = out if isinstance(out, tuple) else (out,)
                shapes[case.id] = "outputs " + ", ".join(str(list(o.shape)) for o in outs)
            except Exception as e:  # noqa: BLE001
                shapes[case.id] = f"the function fails on meta tensors: {one_line(e)}"
        row["notes"].append(shapes[case.id])
        if job["impl"] == "ours" and ours_status:
            row["notes"].append(ours_status)
        append_row(Path(settings.out), row)
        print(summary_line(row) + "  " + "; ".join(row["notes"]), flush=True)


# ---- main ------------------------------------------------------------------------------


def _csv(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _parse_opt(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--ours-opt {text!r}: expected KEY=VALUE")
    key, value = text.split("=", 1)
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output directory (results.jsonl, report, logs, caches)")
    p.add_argument("--only", action="append", help="workloads, families (general, attention, layer) or case ids "
                   "(lora/b16), comma-separated; default all")
    p.add_argument("--configs", action="append", help="config labels (b1,b8,b16), comma-separated; default all")
    p.add_argument("--impls", action="append", help=f"implementations, comma-separated; default {','.join(IMPLS)}")
    p.add_argument("--budget-s", type=float, default=0.0, help="start no new config after this many seconds")
    p.add_argument("--hard-limit-s", type=float, default=0.0, help="kill the running job at this many seconds")
    p.add_argument("--job-timeout-s", type=float, default=300.0, help="kill a job (one config, one impl) after this")
    p.add_argument("--dry-run", action="store_true", help="plan, floors and shape checks only; nothing is measured")
    p.add_argument("--cpu-small", action="store_true", help="the small configs on the CPU (checks, no GPU)")
    p.add_argument("--resume", action="store_true", help="keep DIR/results.jsonl and skip the rows it has")
    p.add_argument("--retry-failed", action="store_true",
                   help="with --resume: run wrong, failed, timeout and crashed rows again")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ours-budget-s", type=float, default=20.0, help="eqiforge.optimize's budget_s (tuning)")
    p.add_argument("--ours-search-s", type=float, default=30.0, help="eqiforge.optimize's search_time_s")
    p.add_argument("--ours-opt", action="append", type=_parse_opt, default=[], metavar="KEY=VALUE",
                   help="another option for eqiforge.optimize (VALUE as JSON where it parses)")
    p.add_argument("--ours-module", default="eqiforge", help=argparse.SUPPRESS)
    p.add_argument("--cache-dir", default=None, help="caches of inductor, Triton and eqiforge; default DIR/cache")
    p.add_argument("--warmup-ms", type=float, default=25.0)
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument("--no-ceilings", action="store_true", help="do not measure copy bandwidth and matmul rate")
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs", help="torch.compile's mode")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--export", default=None, metavar="DIR2",
                   help="at the end, copy results.jsonl, the report and logs-kernels.tar.gz (worker logs and the "
                   "generated kernels) into DIR2 (7 files at most)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker_main(out, Path(args.worker))

    from .workloads import cases as select_cases

    impls = _csv(args.impls) or list(IMPLS)
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        print(f"bench.run: unknown implementation(s) {', '.join(bad)}; known: {', '.join(IMPLS)}", file=sys.stderr)
        return 2
    try:
        cases = select_cases(_csv(args.only) or None, _csv(args.configs) or None, small=args.cpu_small)
    except KeyError as e:
        print(f"bench.run: {e.args[0]}", file=sys.stderr)
        return 2
    if not cases:
        print("bench.run: no config selected", file=sys.stderr)
        return 2

    cache_dir = Path(args.cache_dir).resolve() if args.cache_dir else out / "cache"
    settings = Settings(out=str(out), cpu_small=args.cpu_small, impls=impls, seed=args.seed,
                        warmup_ms=args.warmup_ms, rep_ms=args.rep_ms, ours_module=args.ours_module,
                        ours_budget_s=args.ours_budget_s, ours_search_s=args.ours_search_s,
                        ours_opts=dict(args.ours_opt), cache_dir=str(cache_dir), compile_mode=args.compile_mode,
                        run_id=_dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
                        deadline=(time.time() + args.budget_s) if args.budget_s > 0 else 0.0,
                        measure_ceilings=not (args.no_ceilings or args.cpu_small or args.dry_run))
    jobs = [{"id": c.id, "impl": i} for c in cases for i in IMPLS
            if i in impls and (i != "sdpa_flash" or c.workload.sdpa is not None)]

    results = out / RESULTS
    if results.exists() and not args.resume:
        kept = out / f"results-{settings.run_id}.jsonl.old"
        results.rename(kept)
        print(f"bench.run: the earlier {RESULTS} was moved to {kept.name} (use --resume to continue it)")
    rows = load_rows(results)
    done = {(r.get("id"), r.get("impl")) for r in rows
            if r.get("status") in FINAL and not (args.retry_failed and r.get("status") in RETRYABLE)}
    have_ceilings = any(r.get("impl") == "ceilings" and r.get("status") == "ok" for r in rows)
    todo = [j for j in jobs if (j["id"], j["impl"]) not in done]
    # The budget is this invocation's: a config counts as started once one of
    # its jobs starts in this run, whatever earlier runs measured of it.
    started_cases: set[str] = set()
    (out / PLAN).write_text(json.dumps({"settings": asdict(settings), "jobs": jobs}, indent=1))
    print(f"bench.run: {len(cases)} config(s), {len(jobs)} job(s), {len(jobs) - len(todo)} already done; "
          f"results in {results}", flush=True)

    # Caches for every compiler in the run, under one directory.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_dir / "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(cache_dir / "triton"))
    os.environ.setdefault("EQIFORGE_CACHE_DIR", str(cache_dir / "eqiforge"))

    t0 = time.time()
    if args.dry_run:
        dry_run(settings, todo)
    elif todo or (settings.measure_ceilings and not have_ceilings):
        Parent(args, settings, cases).run(todo, started_cases, settings.measure_ceilings and not have_ceilings)
    elapsed = time.time() - t0
    print(f"bench.run: {elapsed:.0f} s", flush=True)

    status = 0
    paths: list[Path] = []
    if not args.no_report:
        from . import report

        try:
            paths = report.write_report(load_rows(results), out, plan=json.loads((out / PLAN).read_text()))
            for p in paths:
                print(f"bench.run: wrote {p}")
        except Exception as e:  # noqa: BLE001 -- the rows are safe in results.jsonl
            traceback.print_exc()
            print(f"bench.run: the report failed ({one_line(e)}); rerun python -m bench.report {results}",
                  file=sys.stderr)
            status = 1
    if args.export:
        export(out, Path(args.export), [results] + paths)
    return status


def export(out: Path, dest: Path, files: list[Path], limit: int = 15 * 2**20) -> None:
    """Copies the results and the report into dest, with the worker logs and
    the generated kernels in one archive (skipped past `limit` bytes)."""
    import shutil
    import tarfile

    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        if f.exists():
            shutil.copy2(f, dest / f.name)
    archive = dest / "logs-kernels.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for sub in ("logs", "kernels"):
            if (out / sub).exists():
                tar.add(out / sub, arcname=sub)
    if archive.stat().st_size > limit:
        archive.unlink()
        print(f"bench.run: logs and kernels are over {limit >> 20} MB compressed; not exported", file=sys.stderr)
    print(f"bench.run: exported to {dest}")


if __name__ == "__main__":
    sys.exit(main())
