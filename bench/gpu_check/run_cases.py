"""Runs the cases of make_cases.py on the GPU: each emitted module at its
block sizes against the float64 reference; prints relative L2 errors."""
import importlib.util, json, math, sys, time
import numpy as np, torch, triton

print("triton", triton.__version__, "torch", torch.__version__, torch.cuda.get_device_name())
tol = {"f32": 1e-5, "f16": 1e-2}
cases = json.load(open("cases/cases.json"))
fails = 0
for c in cases:
    tag = c["tag"]
    spec = importlib.util.spec_from_file_location(tag, f"cases/{tag}.py")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    data = np.load(f"cases/{tag}.npz")
    dt = torch.float16 if c["dtype"] == "f16" else torch.float32
    args = [torch.tensor(data["in_" + n]).to(dt).cuda() for n in m.INPUTS]
    kw = {p: c["blocks"][a] for a, p in m.BLOCK_PARAMS.items()}
    try:
        outs = m.forward(*args, **kw)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            m.forward(*args, **kw)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) / 10 * 1e3
        errs = []
        for n, o in zip(m.OUTPUTS, outs):
            want = data["out_" + n]
            got = o.double().cpu().numpy()
            e = np.linalg.norm(got - want) / np.linalg.norm(want)
            if not np.isfinite(got).all(): e = math.inf
            errs.append(e)
        ok = max(errs) <= tol[c["dtype"]]
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {tag:45s} err {max(errs):.2e}  {ms:.3f} ms/call  blocks {kw}", flush=True)
    except Exception as e:
        fails += 1
        print(f"ERR  {tag}: {type(e).__name__}: {str(e)[:2000]}", flush=True)
print("failures:", fails)
