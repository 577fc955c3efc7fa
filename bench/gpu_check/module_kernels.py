"""GPU-only time of each kernel of emitted modules, and of each forward.

    python3 bench/gpu_check/module_kernels.py OUT.json MODULE.py[@name=value,...] ...

Each module runs on random inputs of its docstring's shapes (bench/spills.py)
with the given forward keyword arguments; every launch forward makes is
timed on its own (graph_timer: a CUDA graph replay, L2 flushed), then the
whole forward. A measurement of where a subgraph's time goes, not a kernel
of eqiforge's.
"""
import json
import sys

import torch

sys.path.insert(0, ".")
from bench.spills import inputs_of, launches, load, parse_params  # noqa: E402
from bench.timing import L2Flusher, gpu_only_time  # noqa: E402


def main(out_path, specs):
    flusher = L2Flusher(torch.device("cuda"))
    results = []
    for spec in specs:
        path, _, ptext = spec.partition("@")
        params = parse_params(filter(None, ptext.split(",")))
        row = {"module": path, "params": params, "kernels": []}
        try:
            for fn, grid, args, kwargs in launches(load(path), params, "cuda"):
                def launch(*_, fn=fn, grid=grid, args=args, kwargs=kwargs):
                    fn[grid](*args, **kwargs)
                # gpu_only_time takes the device from its first argument.
                t, _ = gpu_only_time(launch, (args[0],), flusher)
                row["kernels"].append({"name": fn.__name__, "grid": list(grid), "us": t * 1e6})
            module = load(path)  # launches() left the first copy's kernels replaced
            inputs = inputs_of(module, "cuda")
            t, _ = gpu_only_time(lambda *a: module.forward(*a, **params), tuple(inputs), flusher)
            row["forward_us"] = t * 1e6
        except Exception as e:  # e.g. out of shared memory: recorded, the others go on
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        print(json.dumps(row), flush=True)
        results.append(row)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
