"""The ``eqiforge`` command.

    eqiforge optimize FILE.py:FN --inputs "f16[16,4096],f16[4096,4096]" [-o kernels.py] [--svg kernels.svg]
    eqiforge demo [-o DIR]
    eqiforge report [ENTRY.json] [--list] [--svg FILE]

``optimize`` imports FN from FILE.py (a function, an nn.Module, or an
nn.Module class constructed without arguments), calls it on random inputs of
the given dtypes and shapes, optimizes it with progress shown, prints the
report and writes the Triton module. ``demo`` optimizes naive attention on the
CPU (Triton's interpreter): the FlashAttention-style kernel the search finds,
verified against PyTorch, the module written, the search statistics printed.
``report`` prints the report of a cached result (the newest by default).

Exit status: 0 success; 1 no candidate verified; 2 bad input or usage (a
program the front end cannot take, a bad option); 3 a missing piece of this
build or an internal error.
"""

from __future__ import annotations

import argparse
import re
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_NO, EXIT_ERROR, EXIT_INTERNAL = 0, 1, 2, 3

_DTYPES = {
    "f16": "float16", "fp16": "float16", "float16": "float16", "half": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "f32": "float32", "fp32": "float32", "float32": "float32", "float": "float32",
    "f64": "float64", "fp64": "float64", "float64": "float64", "double": "float64",
    "i32": "int32", "int32": "int32", "i64": "int64", "int64": "int64", "bool": "bool",
}
_SPEC = re.compile(r"\s*(?:([A-Za-z0-9]+)\[([^\]]*)\]|([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))\s*(?:,|$)")


class UsageError(Exception):
    pass


def parse_inputs(spec: str) -> list[tuple[str, tuple[int, ...]] | float | int]:
    """ "f16[16,4096],f32[4096],0.5" -> [("float16", (16, 4096)), ("float32", (4096,)), 0.5]"""
    out: list[Any] = []
    pos = 0
    spec = spec.strip()
    while pos < len(spec):
        m = _SPEC.match(spec, pos)
        if not m or m.end() == pos:
            raise UsageError(f"--inputs: cannot read {spec[pos:]!r}; expected DTYPE[D0,D1,...] items separated by "
                             "commas (e.g. \"f16[16,4096],f16[4096,4096]\") or numbers")
        if m.group(3) is not None:
            text = m.group(3)
            out.append(float(text) if any(c in text for c in ".eE") else int(text))
        else:
            dtype = _DTYPES.get(m.group(1).lower())
            if dtype is None:
                raise UsageError(f"--inputs: unknown dtype {m.group(1)!r}; expected one of "
                                 f"{', '.join(sorted(set(_DTYPES) - {'half', 'float', 'double'}))}")
            dims = [d.strip() for d in m.group(2).split(",") if d.strip()]
            if not all(d.isdigit() and int(d) > 0 for d in dims):
                raise UsageError(f"--inputs: {m.group(0).strip().rstrip(',')}: dims must be positive integers")
            out.append((dtype, tuple(int(d) for d in dims)))
        pos = m.end()
    if not out:
        raise UsageError("--inputs is empty")
    return out


def make_inputs(specs, device: str, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for s in specs:
        if not isinstance(s, tuple):
            out.append(s)
            continue
        dtype, shape = getattr(torch, s[0]), s[1]
        if dtype == torch.bool:
            t = torch.rand(shape, generator=g) < 0.5
        elif dtype in (torch.int32, torch.int64):
            t = torch.randint(0, 16, shape, generator=g, dtype=dtype)
        else:
            t = (torch.rand(shape, generator=g, dtype=torch.float32) * 2 - 1).to(dtype)
        out.append(t.to(device))
    return out


def load_target(target: str, dtype, device: str):
    """FILE.py:NAME -> the callable (a module class is constructed, moved and cast)."""
    import torch

    if ":" not in target:
        raise UsageError(f"{target}: expected FILE.py:NAME (the function or module to optimize)")
    file, name = target.rsplit(":", 1)
    path = Path(file)
    if not path.is_file():
        raise UsageError(f"{file}: no such file")
    sys.path.insert(0, str(path.resolve().parent))
    try:
        namespace = runpy.run_path(str(path), run_name="__eqiforge_target__")
    finally:
        sys.path.pop(0)
    if name not in namespace:
        defined = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("_"))
        raise UsageError(f"{file} defines no {name!r}; callables there: {', '.join(defined) or 'none'}")
    obj = namespace[name]
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        obj = obj()
    if isinstance(obj, torch.nn.Module):
        obj = obj.to(device).eval()
        if dtype is not None:
            obj = obj.to(dtype)
    if not callable(obj):
        raise UsageError(f"{target} is a {type(obj).__name__}, not a function or module")
    return obj


def _options_from(args) -> dict[str, Any]:
    opts: dict[str, Any] = {"verbose": 0 if args.quiet else (2 if args.verbose else 1)}
    if args.budget is not None:
        opts["budget_s"] = args.budget
    if args.target is not None:
        opts["target"] = args.target
    if args.cache_dir is not None:
        opts["cache_dir"] = args.cache_dir
    if args.no_cache:
        opts["cache"] = False
    if getattr(args, "fallback", False):
        opts["unsupported"] = "fallback"
    if getattr(args, "cuda_graphs", False):
        opts["cuda_graphs"] = True
    if getattr(args, "no_baselines", False):
        opts["baselines"] = False
    return opts


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def cmd_optimize(args) -> int:
    import torch

    from .api import optimize

    specs = parse_inputs(args.inputs)
    device = args.device or _default_device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {device}: no CUDA GPU is available to this PyTorch "
                         "(torch.cuda.is_available() is False); use --device cpu")
    floats = [getattr(torch, s[0]) for s in specs if isinstance(s, tuple) and s[0].startswith(("float", "bfloat"))]
    fn = load_target(args.target_fn, floats[0] if floats else None, device)
    inputs = make_inputs(specs, device, args.seed)
    program = optimize(fn, *inputs, **_options_from(args))
    print(program.report.text(), end="")
    if args.output:
        written = program.save(args.output)
        for p in written if isinstance(written, list) else [written]:
            print(f"wrote {p}")
    if args.svg:
        Path(args.svg).write_text(program.report.svg())
        print(f"wrote {args.svg}")
    return EXIT_OK


# ---- demo ----------------------------------------------------------------------------


def naive_attention(q, k, v):
    """Multi-head attention written the naive way: scores, softmax, weighted sum."""
    import torch

    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ v


def is_flash_style(report) -> bool:
    """One kernel that loops over key blocks carrying the softmax state."""
    return len(report.kernels) == 1 and bool(report.kernels[0].loops)


# A sequence long enough that a whole row of scores in one program no longer
# pays, small enough for Triton's interpreter.
DEMO_SEQ = 1024


def cmd_demo(args) -> int:
    import torch

    from .api import optimize
    from .runtime.verify import fresh_args, rel_l2

    if args.seq < 1:
        print(f"eqiforge demo: --seq must be positive, got {args.seq}", file=sys.stderr)
        return EXIT_ERROR
    heads, seq, dim = 2, args.seq, 16
    g = torch.Generator().manual_seed(args.seed)
    q, k, v = (torch.rand(heads, seq, dim, generator=g) * 2 - 1 for _ in range(3))
    print(f"eqiforge demo: naive attention, {heads} heads, sequence {seq}, head dim {dim}, float32, on the CPU "
          "(Triton's interpreter)\n")
    print("    scores = q @ k.transpose(-1, -2) / sqrt(dim)\n    out = softmax(scores, dim=-1) @ v\n")
    opts = _options_from(args)
    opts.setdefault("cache", False)
    program = optimize(naive_attention, q, k, v, **opts)
    report = program.report
    print()
    print(report.text(), end="")
    fresh = fresh_args((q, k, v), args.seed + 7)
    error = rel_l2(program(*fresh), naive_attention(*fresh))
    print(f"\nchecked again on fresh inputs: relative L2 error {error:.2e} against PyTorch eager")
    out_dir = Path(args.output or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    module_path = program.save(out_dir / "attention_kernels.py")
    svg_path = out_dir / "attention_kernels.svg"
    svg_path.write_text(report.svg())
    print(f"wrote {module_path} and {svg_path}")
    flash = is_flash_style(report)
    print("FlashAttention-style kernel found: one kernel, a loop over key blocks carrying (max, sum, P·V)"
          if flash else "the chosen program is not a single rolling-softmax kernel")
    return EXIT_OK if error <= 1e-2 else EXIT_NO


# ---- report --------------------------------------------------------------------------


def cmd_report(args) -> int:
    from .options import make_options
    from .runtime.cache import Cache, read_entry
    from .runtime.report import Report

    cache = Cache(make_options(**({"cache_dir": args.cache_dir} if args.cache_dir else {})).resolved_cache_dir())
    if args.list:
        entries = cache.entries()
        if not entries:
            print(f"no cached programs in {cache.directory}")
        for p in entries:
            e = read_entry(p)
            if isinstance(e, str):
                print(f"{p}  (unreadable: {e})")
                continue
            r = Report.from_json(e.payload.get("report", {"program": "?", "device": "?"}))
            print(f"{p}  {r.program} on {r.device}, {len(r.kernels)} kernel(s)")
        return EXIT_OK
    if args.entry:
        path = Path(args.entry)
    else:
        entries = cache.entries()
        if not entries:
            print(f"eqiforge report: no cached programs in {cache.directory}", file=sys.stderr)
            return EXIT_ERROR
        path = entries[0]
    entry = read_entry(path)
    if isinstance(entry, str):
        print(f"eqiforge report: {path}: {entry}", file=sys.stderr)
        return EXIT_ERROR
    report = Report.from_json(entry.payload["report"])
    if args.json:
        import json

        print(json.dumps(report.to_json(), indent=1))
    else:
        print(f"{path}\n")
        print(report.text(), end="")
    if args.svg:
        Path(args.svg).write_text(report.svg())
        print(f"wrote {args.svg}")
    return EXIT_OK


# ---- main ----------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=float, help="seconds of tuning on the GPU (default 60)")
    p.add_argument("--target", help="cost-model profile: h200, h100, a100, rtx5090 (default: the GPU's)")
    p.add_argument("--cache-dir", help="cache folder (default: $EQIFORGE_CACHE_DIR or ~/.cache/eqiforge)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument("-v", "--verbose", action="store_true", help="every candidate and configuration")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eqiforge", description="eqiforge: a superoptimizer for GPU tensor programs")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    p = sub.add_parser("optimize", help="optimize a PyTorch function or module from a file",
                       description="Optimize FN from FILE.py for random inputs of the given dtypes and shapes.")
    p.add_argument("target_fn", metavar="FILE.py:FN")
    p.add_argument("--inputs", required=True, help='dtypes and shapes, e.g. "f16[16,4096],f16[4096,4096]"')
    p.add_argument("-o", "--output", help="write the Triton module here")
    p.add_argument("--svg", help="write the picture of the kernel structure here")
    p.add_argument("--device", help="cuda or cpu (default: cuda when there is a GPU)")
    p.add_argument("--fallback", action="store_true", help="run unsupported operations in PyTorch")
    p.add_argument("--cuda-graphs", action="store_true", help="replay the program as one CUDA graph")
    p.add_argument("--no-baselines", action="store_true", help="do not time eager and torch.compile")
    _common(p)
    p.set_defaults(run=cmd_optimize)
    p = sub.add_parser("demo", help="naive attention in, a FlashAttention-style kernel out (CPU)",
                       description="Optimize naive attention on the CPU with Triton's interpreter and show the result.")
    p.add_argument("-o", "--output", help="folder for the emitted module and picture (default: .)")
    p.add_argument("--seq", type=int, default=DEMO_SEQ,
                   help=f"sequence length (queries and keys; default {DEMO_SEQ}: below a few hundred keys the "
                        "one-pass kernel, with no key loop, is the better program)")
    _common(p)
    p.set_defaults(run=cmd_demo)
    p = sub.add_parser("report", help="show the report of a cached result",
                       description="Print the report of a cached result (default: the newest).")
    p.add_argument("entry", nargs="?", help="a cache entry file (default: the newest)")
    p.add_argument("--list", action="store_true", help="list the cached results")
    p.add_argument("--svg", help="write the picture of the kernel structure here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--cache-dir", help="cache folder (default: $EQIFORGE_CACHE_DIR or ~/.cache/eqiforge)")
    p.set_defaults(run=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    from . import _core
    from .options import OptionError
    from .runtime.launch import BindingError
    from .runtime.search import MissingPieceError
    from .runtime.tuner import NoValidCandidate

    try:
        return args.run(args)
    except UsageError as e:
        print(f"eqiforge {args.verb}: {e}", file=sys.stderr)
        return EXIT_ERROR
    except (OptionError, _core.IRError, BindingError) as e:
        print(f"eqiforge {args.verb}: {e}", file=sys.stderr)
        return EXIT_ERROR
    except NoValidCandidate as e:
        print(f"eqiforge {args.verb}: {e}", file=sys.stderr)
        return EXIT_NO
    except MissingPieceError as e:
        print(f"eqiforge {args.verb}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:
        print(f"eqiforge {args.verb}: interrupted", file=sys.stderr)
        return 130
    except Exception:  # noqa: BLE001 -- a bug: show it, exit 3
        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
