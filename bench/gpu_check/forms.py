"""What the form probes (attention_forms.py, decode_forms.py) share: the
search's top candidate of an attention case as a loaded module, and one
configuration's check and timing. Measurement helpers only; nothing in the
package uses them."""
import json

import torch

from bench.run import rel_l2
from bench.workloads import ATTENTION, Case, make_inputs
from eqiforge.frontend import to_ir
from eqiforge.options import make_options
from eqiforge.runtime import search
from eqiforge.runtime.launch import Binding
from eqiforge.runtime.loader import load_module
from eqiforge.runtime.measure import graph_timer

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def top_candidate(workload, label):
    """(args, sdpa, ref, module, module inputs, result header) of the
    attention workload's config `label`: its inputs, SDPA and its output, and
    the search's top candidate loaded (Triton's interpreter on the CPU)."""
    w = [w for w in ATTENTION if w.name == workload][0]
    case = Case(w, w.config(label))
    args = make_inputs(case, device=DEVICE)
    sdpa = case.sdpa_fn()
    ref = sdpa(*args)
    fe = to_ir(case.fn(), *args)
    found = search.find_candidates(fe.text, make_options(top_k=4), "h200", file=f"<{fe.name}>")
    cand = found.candidates[0]
    module = load_module(search.ensure_source(cand), DEVICE == "cpu", None)
    params = dict(getattr(module, "BLOCK_PARAMS", {}))
    header = {"program": cand.program, "estimate_us": cand.estimate_s * 1e6, "block_params": params, "rows": []}
    return args, sdpa, ref, module, Binding(fe).module_inputs(args), header


def time_config(fn, ref):
    """One configuration: its error against ref and, on a GPU where it is
    right (rel. L2 <= 1e-2), its graph_timer time in µs; or why it failed."""
    row = {}
    try:
        out = fn()
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        row["error"] = err = rel_l2(out.reshape(ref.shape), ref)
        if err <= 1e-2 and DEVICE == "cuda":
            row["us"] = 1e6 * graph_timer(fn, 20.0)
    except Exception as e:  # noqa: BLE001 -- a configuration that fails is recorded
        row["failed"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}" if str(e) else type(e).__name__
    return row


def report_form(result, form, keys, path, top=5):
    """Prints the form's fastest rows (µs, then the configuration's `keys`),
    how many failed and how many were wrong, and saves the result so far."""
    rows = [r for r in result["rows"] if r["form"] == form]
    ok = sorted((r for r in rows if "us" in r), key=lambda r: r["us"])
    print(form, "best", [(round(r["us"], 1), *(r[k] for k in keys)) for r in ok[:top]],
          "failed", sum(1 for r in rows if "failed" in r),
          "wrong", sum(1 for r in rows if r.get("error", 0) > 1e-2), flush=True)
    json.dump(result, open(path, "w"), indent=1, default=str)


def finish(result, sdpa, args, path):
    """Times SDPA (on a GPU) into the result and saves it."""
    if DEVICE == "cuda":
        result["sdpa_us"] = 1e6 * graph_timer(lambda: sdpa(*args), 20.0)
        print("sdpa", round(result["sdpa_us"], 1), flush=True)
    json.dump(result, open(path, "w"), indent=1, default=str)
