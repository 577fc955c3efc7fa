"""Builds GPU test cases: emitted modules, random inputs and float64 reference
outputs (reference interpreter), for the tiled examples resized to larger,
ragged extents, in fp32 and fp16. Run here; run_cases.py runs them on a GPU."""
import json, os, re, sys, subprocess
import numpy as np
import eqiforge

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPT = os.environ.get("EQIFORGE_OPT", "eqiforge-opt")
SIZES = {
    "matmul/split_k.eqf": "(dims (m 300) (k 1000) (n 257))",
    "matmul/split_k_two_levels.eqf": "(dims (m 130) (k 700) (n 96))",
    "attention/flash.eqf": "(dims (h 4) (s 300) (t 517) (e 64) (f 64))",
    "attention_decode/flash_decoding.eqf": "(dims (h 4) (s 1) (t 2100) (e 128) (f 128))",
    "attention_decode/split_channels.eqf": "(dims (h 4) (s 1) (t 1500) (e 64) (f 128))",
    "rmsnorm_mlp/factor_after_fused.eqf": "(dims (m 16) (k 1000) (n 700))",
    "lora/two_kernels.eqf": "(dims (m 40) (k 1000) (n 500) (r 16))",
    "lora/one_kernel.eqf": "(dims (m 40) (k 1000) (n 500) (r 16))",
    "layernorm/one_pass_tuple.eqf": "(dims (m 100) (k 1000))",
    "layernorm/one_pass_welford.eqf": "(dims (m 100) (k 1000))",
}
BLOCKS = {
    "matmul/split_k.eqf": {"m.0": 64, "k.0": 32, "n.0": 64},
    "matmul/split_k_two_levels.eqf": {"m.0": 64, "k.0": 128, "k.1": 32},
    "attention/flash.eqf": {"s.0": 64, "t.0": 64},
    "attention_decode/flash_decoding.eqf": {"t.0": 256},
    "attention_decode/split_channels.eqf": {"t.0": 128, "f.0": 32},
    "rmsnorm_mlp/factor_after_fused.eqf": {"k.0": 64, "n.0": 64},
    "lora/two_kernels.eqf": {"k.0": 64, "n.0": 64, "r.0": 16},
    "lora/one_kernel.eqf": {"k.0": 64, "n.0": 64},
    "layernorm/one_pass_tuple.eqf": {"m.0": 4, "k.0": 256},
    "layernorm/one_pass_welford.eqf": {"m.0": 4, "k.0": 256},
}
EXTRA = [  # (example, unit axes, blocks): squeezed reduced dims with scalar masks
    ("matmul/split_k_two_levels.eqf", "k.1", {"m.0": 64, "k.0": 100}),
    ("attention/flash.eqf", "none", {"h.0": 2, "s.0": 16, "t.0": 32}),
]
cases = []
os.makedirs("cases", exist_ok=True)
for name, dims in SIZES.items():
    text = open(f"{ROOT}/examples/{name}").read()
    text = re.sub(r"\(dims(?:\s*\([^()]*\))+\s*\)", dims, text, count=1)
    for dtype in ("f32", "f16"):
        t = text.replace(" f32 ", f" {dtype} ")
        tag = name.replace("/", "_").replace(".eqf", "") + "_" + dtype
        mod = subprocess.run([OPT, "emit", "-"], input=t, capture_output=True, text=True, check=True).stdout
        open(f"cases/{tag}.py", "w").write(mod)
        store = np.float16 if dtype == "f16" else np.float32
        ins = {k: v.astype(store).astype(np.float64) for k, v in eqiforge.random_inputs(t, seed=1).items()}
        blocks = dict(BLOCKS[name])
        units = re.search(r"UNIT_AXES = \((.*)\)", mod).group(1)
        for a in re.findall(r'"([^"]+)"', units):
            blocks[a] = 1
        outs = eqiforge.evaluate(t, blocks=blocks, inputs=ins)
        np.savez(f"cases/{tag}.npz", **{"in_" + k: v.astype(store) for k, v in ins.items()}, **{"out_" + k: v for k, v in outs.items()})
        cases.append({"tag": tag, "dtype": dtype, "blocks": blocks})
        print(tag, flush=True)
for i, (name, units, blocks) in enumerate(EXTRA):
    text = open(f"{ROOT}/examples/{name}").read()
    text = re.sub(r"\(dims(?:\s*\([^()]*\))+\s*\)", SIZES[name], text, count=1)
    tag = name.replace("/", "_").replace(".eqf", "") + f"_units{i}_f32"
    mod = subprocess.run([OPT, "emit", "-", "--unit-axes", units], input=text, capture_output=True, text=True, check=True).stdout
    open(f"cases/{tag}.py", "w").write(mod)
    ins = {k: v.astype(np.float32).astype(np.float64) for k, v in eqiforge.random_inputs(text, seed=1).items()}
    b = dict(blocks)
    for a in re.findall(r'"([^"]+)"', re.search(r"UNIT_AXES = \((.*)\)", mod).group(1)):
        b[a] = 1
    outs = eqiforge.evaluate(text, blocks=b, inputs=ins)
    np.savez(f"cases/{tag}.npz", **{"in_" + k: v.astype(np.float32) for k, v in ins.items()}, **{"out_" + k: v for k, v in outs.items()})
    cases.append({"tag": tag, "dtype": "f32", "blocks": b})
    print(tag, flush=True)
json.dump(cases, open("cases/cases.json", "w"), indent=1)
