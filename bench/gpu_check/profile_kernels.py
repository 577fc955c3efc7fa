"""Per-kernel GPU times of eqiforge's chosen program for a few bench cases."""
import json, os, sys, torch
sys.path.insert(0, ".")
from bench.workloads import Case, GENERAL, make_inputs
import eqiforge
from torch.profiler import profile, ProfilerActivity

out = os.environ.get("OUT", ".")
res = {}
for cid in sys.argv[1:]:
    name, cfg = cid.split("/")
    w = [w for w in GENERAL if w.name == name][0]
    case = Case(w, w.config(cfg))
    inp = make_inputs(case, device="cuda")
    fn = case.fn()
    opt = eqiforge.optimize(fn, *inp, budget_s=15, search_time_s=30, top_k=16, cache=False)
    for _ in range(20):
        opt(*inp)
    torch.cuda.synchronize()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(20):
            flush.zero_()
            opt(*inp)
        torch.cuda.synchronize()
    ev = {}
    for e in p.key_averages():
        if e.device_type.name == "CUDA" or "kernel" in e.key:
            ev[e.key] = (e.count, e.device_time if hasattr(e, "device_time") else e.cuda_time)
    res[cid] = {"params": opt.params, "program": opt.candidate_program, "kernels": ev}
    print(cid, opt.params, json.dumps(ev, indent=0), flush=True)
    open(os.path.join(out, cid.replace("/", "-") + ".py"), "w").write(opt.source)
json.dump(res, open(os.path.join(out, "prof.json"), "w"), indent=1, default=str)
