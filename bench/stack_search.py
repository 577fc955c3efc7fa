"""Search time of a stack of identical layers against one layer (no GPU).

A layer (by default a pre-norm decoder layer at one decode step: RMSNorm,
the query projection, attention over the layer's KV cache, the output
projection and the residual; RMSNorm, a SwiGLU FFN and the residual; or a
benchmark workload whose output is shaped like its first input, such as
mhc_decode) is stacked L times, each layer with weights (and caches) of its
own, the same shapes. With --layers 1 any workload's single layer is
measured (the layers' search time on one core). Each stack goes through
what eqiforge.optimize does before tuning: capture, the partition into
subgraphs of at most `partition_ops` operators, and the search (saturation
and extraction) of every distinct subgraph, once each, as the partitioned
runtime does. Nothing runs on a GPU and nothing is emitted or tuned, so the
times are the search's alone, on this machine's CPU.

    python3 -m bench.stack_search --layers 1,8 [--workload decoder] [--partition-ops 16] [--out stack.json]
    taskset -c 0 python3 -m bench.stack_search --layers 1 --workload mla_qknorm_decode   # one core

Prints, per stack: operators, subgraphs, distinct subgraphs, the search's
wall time, and its ratio to the first stack's.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Callable

import torch
import torch.nn.functional as F

from bench.workloads import EPS, WORKLOADS, Case, Config, InputSpec, Workload, _w, make_inputs
from eqiforge.frontend import to_ir
from eqiforge.options import Options
from eqiforge.runtime import partition, search

def rms(x, g):
    """RMSNorm with the mean of squares in fp32, as fp16 decoder layers
    compute it (bench.workloads.rms keeps the input's dtype)."""
    return x * torch.rsqrt((x.float() * x.float()).mean(-1, keepdim=True) + EPS).to(x.dtype) * g


def decoder_layer(h, g1, wq, k_cache, v_cache, wo, g2, wg, wu, wd):
    """h [B, D]; wq [D, H*E]; k_cache, v_cache [B, H, S, E] (the current
    token's key and value already in them); wo [H*E, D]; wg, wu [D, F]; wd [F, D]."""
    b = h.shape[0]
    heads, e = k_cache.shape[1], k_cache.shape[3]
    q = (rms(h, g1) @ wq).view(b, heads, 1, e)
    p = torch.softmax((q @ k_cache.transpose(-1, -2)) / math.sqrt(e), dim=-1)
    h = h + (p @ v_cache).reshape(b, heads * e) @ wo
    m = rms(h, g2)
    return h + (F.silu(m @ wg) * (m @ wu)) @ wd


def _decoder_inputs(p):
    b, d, h, e, s, f = p["B"], p["D"], p["H"], p["E"], p["S"], p["F"]
    return [InputSpec("h", (b, d), "act"), InputSpec("g1", (d,), "gain"), _w("wq", d, h * e),
            InputSpec("k_cache", (b, h, s, e), "act"), InputSpec("v_cache", (b, h, s, e), "act"),
            _w("wo", h * e, d), InputSpec("g2", (d,), "gain"), _w("wg", d, f), _w("wu", d, f), _w("wd", f, d)]


DECODER = Workload(
    "decoder", "layer", "Pre-norm decoder layer decode (hidden 1024, 16 heads, KV 4K, FFN 4096)",
    lambda p: decoder_layer, _decoder_inputs,
    (Config("b1", {"B": 1, "D": 1024, "H": 16, "E": 64, "S": 4096, "F": 4096}),),
    Config("small", {"B": 1, "D": 64, "H": 4, "E": 16, "S": 64, "F": 128}),
)


def stacked(layer: Callable, per_layer: int) -> Callable:
    """layer(x, *w) applied in turn with each layer's `per_layer` weights."""

    def stack(x, *weights):
        for i in range(0, len(weights), per_layer):
            x = layer(x, *weights[i:i + per_layer])
        return x

    return stack


def stack_case(case: Case, layers: int) -> tuple[Callable, list[torch.Tensor]]:
    """The case's layer stacked `layers` deep: its first input is the stream
    (the layer's output has its shape), the others each layer's own."""
    inputs = [make_inputs(case, seed=i) for i in range(layers)]
    specs = case.specs()
    fn = case.fn()
    if layers > 1:
        with torch.no_grad():
            out = fn(*(torch.empty(s.shape, device="meta", dtype=torch.float16) for s in specs))
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != specs[0].shape:
            raise SystemExit(f"stack_search: {case.id} cannot be stacked: its output is not shaped like "
                             f"its first input {specs[0].name} {specs[0].shape}")
    return stacked(fn, len(specs) - 1), [inputs[0][0]] + [t for one in inputs for t in one[1:]]


def measure(case: Case, layers: int, args, opts: Options) -> dict:
    fn, inputs = stack_case(case, layers)
    t0 = time.perf_counter()
    fe = to_ir(fn, *inputs)
    t_capture = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = partition.partition_program(fe.text, opts.partition_ops)
    t_partition = time.perf_counter() - t0
    searched: dict[str, dict] = {}
    t0 = time.perf_counter()
    for sg in plan.subgraphs:
        if sg.hash in searched:
            continue
        t1 = time.perf_counter()
        found = search.find_candidates(sg.program, opts, args.target, file=f"<{sg.name}>")
        searched[sg.hash] = dict(subgraph=sg.name, ops=sg.ops, seconds=time.perf_counter() - t1,
                                 candidates=len(found.candidates),
                                 limit_hit=bool(found.stats.get("limit_hit")))
        print(f"  L={layers} {sg.name}: {sg.ops} ops, {searched[sg.hash]['seconds']:.1f} s, "
              f"{len(found.candidates)} candidates", flush=True)
    t_search = time.perf_counter() - t0
    return dict(layers=layers, ops=plan.ops, subgraphs=len(plan.subgraphs), distinct=plan.distinct(),
                period=plan.period, units=plan.units,
                subgraph_ops=[sg.ops for sg in plan.subgraphs],
                capture_s=t_capture, partition_s=t_partition, search_s=t_search,
                searches=list(searched.values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="1,8", help="stack depths, comma-separated")
    ap.add_argument("--partition-ops", type=int, default=Options().partition_ops)
    ap.add_argument("--target", default="h200")
    ap.add_argument("--workload", default="decoder",
                    help="decoder (this file's layer) or a bench workload, e.g. mhc_decode or mla_qknorm_decode/b1")
    ap.add_argument("--config", default=None, help="its config label (default: its first; small: the small one)")
    ap.add_argument("--search-time-s", type=float, default=Options().search_time_s)
    ap.add_argument("--extract-time-s", type=float, default=Options().extract_time_s)
    ap.add_argument("--top-k", type=int, default=Options().top_k)
    ap.add_argument("--out", default=None, help="write the rows as JSON")
    args = ap.parse_args(argv)
    if not (search.has_extraction() and partition.has_partitioning()):
        print("stack_search: this build of eqiforge-opt has no extraction or partitioning", file=sys.stderr)
        return 2
    opts = Options(partition_ops=args.partition_ops, search_time_s=args.search_time_s,
                   extract_time_s=args.extract_time_s, top_k=args.top_k, cache=False)
    name, _, label = args.workload.partition("/")
    workload = DECODER if name == "decoder" else WORKLOADS.get(name)
    if workload is None:
        print(f"stack_search: no workload {name!r}; decoder or one of {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    case = Case(workload, workload.config(args.config or label or workload.configs[0].label))
    rows = []
    for layers in (int(x) for x in args.layers.split(",")):
        row = measure(case, layers, args, opts)
        rows.append(row)
        ratio = row["search_s"] / rows[0]["search_s"] if rows[0]["search_s"] else float("nan")
        print(f"L={layers}: {row['ops']} operators, {row['subgraphs']} subgraphs ({row['distinct']} distinct), "
              f"search {row['search_s']:.1f} s ({row['search_s'] / layers:.1f} s a layer; "
              f"{ratio:.2f}x the first stack's), "
              f"capture {row['capture_s']:.1f} s, partition {row['partition_s']:.2f} s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"case": case.id, "params": case.params, "args": vars(args), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
