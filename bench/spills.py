"""Registers and spills of an emitted module's kernels, without a GPU.

    python3 bench/spills.py MODULE.py [--arch 90] [--param name=value ...]

Runs the module's forward on CPU tensors (random, of the shapes its
docstring gives) with each kernel's launch intercepted, compiles every
launched kernel with the launch's constexprs and options for the given
CUDA architecture (triton.compile, no device needed), and runs the ptxas
bundled with triton with -v on its PTX: one line per kernel with its
registers and spill stores and loads in bytes per thread. A kernel whose
tiles are past the registers spills; the cost model's register budget
(data/targets/*.json) is meant to keep the search from choosing one.
--param passes forward's keyword arguments (block sizes, num_warps).
Exit status 1 when some kernel spills. Run it without TRITON_INTERPRET:
under it triton's library functions are interpreted and nothing compiles.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from eqiforge.check import load_module
from eqiforge.runtime.loader import kernels_of

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32,
          "i64": torch.int64, "bool": torch.bool}
POINTER = {torch.float16: "*fp16", torch.bfloat16: "*bf16", torch.float32: "*fp32", torch.int32: "*i32",
           torch.int64: "*i64", torch.bool: "*i1"}


def load(path):
    return load_module(Path(path).read_text(), "spills_module")


_BOOLS = {"True": True, "False": False}


def parse_params(items):
    """forward's keyword arguments from name=value items (integers, True or
    False (a launch form), but input_precision's text)."""
    out = {}
    for item in items:
        k, _, v = item.partition("=")
        out[k] = v if k == "input_precision" else _BOOLS[v] if v in _BOOLS else int(v)
    return out


def inputs_of(module, device="cpu"):
    """Random inputs from forward's docstring: `x f16[m e k], ...` with the
    extents the module declares (M, E, K)."""
    doc = module.forward.__doc__ or ""
    head = doc.split("->")[0]
    out = []
    for name, dtype, dims in re.findall(r"(\w+) (\w+)\[([^\]]*)\]", head):
        shape = [getattr(module, d.upper()) for d in dims.split()]
        t = torch.randn(shape) if DTYPES[dtype].is_floating_point else torch.randint(0, 2, shape)
        out.append(t.to(device=device, dtype=DTYPES[dtype]))
    return out


class Launch:
    """Stands for a kernel: `kernel[grid](...)` records the launch."""

    def __init__(self, fn, record):
        self.fn, self.record = fn, record

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.record.append((self.fn, grid, args, kwargs))
        return launch


def launches(module, params, device="cpu"):
    """(kernel, grid, args, kwargs) of each launch forward makes, none run.
    The module's kernels stay replaced: load it again to run it."""
    record = []
    for name, kernel in kernels_of(module).items():
        setattr(module, name, Launch(kernel, record))
    module.forward(*inputs_of(module, device), **params)
    return record


def ptxas_report(fn, args, kwargs, arch):
    """(registers, spill store bytes, spill load bytes) per thread of one
    launch's kernel, compiled for sm_<arch>."""
    names = fn.arg_names
    values = dict(zip(names, args))
    options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages") if k in kwargs}
    values.update(kwargs)
    signature, constexprs = {}, {}
    for i, n in enumerate(names):
        v = values[n]
        if isinstance(v, torch.Tensor):
            signature[n] = POINTER[v.dtype]
        else:
            signature[n] = "constexpr"
            constexprs[(i,)] = v
    compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs),
                              target=GPUTarget("cuda", arch, 32), options=options)
    # The wheel's plain ptxas may predate the PTX version this triton writes
    # (triton 3.9's 9.4 against its ptxas 8.8); ptxas-blackwell reads both.
    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    ptxas = next(os.path.join(bin_dir, b) for b in ("ptxas-blackwell", "ptxas")
                 if os.path.exists(os.path.join(bin_dir, b)))
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        with open(ptx, "w") as f:
            f.write(compiled.asm["ptx"])
        r = subprocess.run([ptxas, "-v", f"--gpu-name=sm_{arch}a", ptx, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    text = r.stderr
    regs = re.search(r"Used (\d+) registers", text)
    stores = re.search(r"(\d+) bytes spill stores", text)
    loads = re.search(r"(\d+) bytes spill loads", text)
    if not regs:
        raise RuntimeError(f"ptxas gave no register count for {fn.__name__}:\n{text}")
    return int(regs.group(1)), int(stores.group(1)) if stores else 0, int(loads.group(1)) if loads else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("module")
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--param", action="append", default=[], help="forward's keyword argument name=value")
    a = ap.parse_args(argv)
    params = parse_params(a.param)
    module = load(a.module)
    worst = 0
    for fn, _grid, args, kwargs in launches(module, params):
        regs, stores, loads = ptxas_report(fn, args, dict(kwargs), a.arch)
        worst = max(worst, stores)
        print(f"{fn.__name__}: {regs} registers, {stores} bytes spill stores, {loads} bytes spill loads")
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
