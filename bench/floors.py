"""The physical floor of each workload config: the fewest bytes a program
must move through device memory and the fewest matrix flops it must do.

    floor = max(bytes / 4.3 TB/s, flops / 790 TFLOP/s)

The two rates were measured on an H200 of this project's machines (a large
device-to-device copy, counting bytes read and written; an 8192^3 matrix
product on random data). No implementation runs much under the floor; the
measured time over it is the gap.

Conventions, the same for every workload:
  - bytes: every input read once and every output written once, in the
    workload's dtype (fp16: 2 bytes). Where part of an input cannot affect
    the result it is not counted (sliding-window attention reads only the
    window's keys and values);
  - flops: 2*M*N*K for every matrix product of the cheapest equivalent form
    we know (causal attention counts only the unmasked pairs; MLA counts the
    form with the up-projections absorbed into the query and the output).
    Pointwise work, reductions, exp and the like are left out: on these
    shapes they are far under both terms.
Each function takes a config's params (see bench/workloads.py) and the
element size in bytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

BANDWIDTH = 4.3e12      # bytes/s, device-to-device copy on the H200
MMA_RATE = 790e12       # flop/s, dense fp16/bf16 matrix product on the H200


@dataclass(frozen=True)
class Floor:
    bytes: int
    flops: int
    note: str = ""

    @property
    def mem_s(self) -> float:
        return self.bytes / BANDWIDTH

    @property
    def compute_s(self) -> float:
        return self.flops / MMA_RATE

    @property
    def floor_s(self) -> float:
        return max(self.mem_s, self.compute_s)

    @property
    def bound(self) -> str:
        return "memory" if self.mem_s >= self.compute_s else "compute"

    def gap(self, seconds: float | None) -> float | None:
        """Measured time over the floor (>= 1 for any real implementation)."""
        if seconds is None or self.floor_s <= 0:
            return None
        return seconds / self.floor_s

    def to_json(self) -> dict:
        d = asdict(self)
        d.update(mem_s=self.mem_s, compute_s=self.compute_s, floor_s=self.floor_s, bound=self.bound,
                 bandwidth=BANDWIDTH, mma_rate=MMA_RATE)
        return d


def mm(m: int, n: int, k: int) -> int:
    """Flops of an [m, k] x [k, n] product."""
    return 2 * m * n * k


# ---- general programs -------------------------------------------------------------------


def rmsnorm_gated_mlp(p: dict, elem: int = 2) -> Floor:
    t, d, n = p["T"], p["D"], p["N"]
    return Floor(elem * (t * d + d + 2 * d * n + t * n), 2 * mm(t, n, d))


def layernorm_gemm(p: dict, elem: int = 2) -> Floor:
    t, d, n = p["T"], p["D"], p["N"]
    return Floor(elem * (t * d + 2 * d + d * n + t * n), mm(t, n, d))


def lora(p: dict, elem: int = 2) -> Floor:
    t, d, n, r = p["T"], p["D"], p["N"], p["R"]
    return Floor(elem * (t * d + d * n + d * r + r * n + t * n), mm(t, n, d) + mm(t, r, d) + mm(t, n, r))


def rmsnorm_swiglu_ffn(p: dict, elem: int = 2) -> Floor:
    t, d, n = p["T"], p["D"], p["N"]
    return Floor(elem * (t * d + d + 3 * d * n + t * d), 2 * mm(t, n, d) + mm(t, d, n))


def gated_mlp(p: dict, elem: int = 2) -> Floor:
    t, d, n = p["T"], p["D"], p["N"]
    return Floor(elem * (t * d + 2 * d * n + t * n), 2 * mm(t, n, d))


def ngpt_update(p: dict, elem: int = 2) -> Floor:
    t, d = p["T"], p["D"]
    return Floor(elem * (2 * t * d + d * d + d + t * d), mm(t, d, d))


def qk_norm_projections(p: dict, elem: int = 2) -> Floor:
    t, d, he, e = p["T"], p["D"], p["H"] * p["E"], p["E"]
    return Floor(elem * (t * d + 2 * d * he + 2 * e + 2 * t * he), 2 * mm(t, he, d))


# ---- attention --------------------------------------------------------------------------


def attention_decode(p: dict, elem: int = 2) -> Floor:
    b, h, s, e = p["B"], p["H"], p["S"], p["E"]
    return Floor(elem * (2 * b * h * e + 2 * b * h * s * e), b * h * (mm(1, s, e) + mm(1, e, s)))


def attention_prefill(p: dict, elem: int = 2) -> Floor:
    b, h, s, e = p["B"], p["H"], p["S"], p["E"]
    pairs = s * (s + 1) // 2  # (query, key) pairs the causal mask keeps
    return Floor(elem * 4 * b * h * s * e, b * h * 2 * (2 * pairs * e), "causal: only the kept pairs")


# ---- decode layers ----------------------------------------------------------------------


def mla_qknorm_decode(p: dict, elem: int = 2) -> Floor:
    b, d, h, e, c, s = p["B"], p["D"], p["H"], p["E"], p["C"], p["S"]
    he = h * e
    nbytes = elem * (b * d + d * he + e + b * s * c + b * s * h + 2 * c * he + e + he * d + b * d)
    flops = (mm(b, he, d)                 # q projection
             + b * h * mm(1, c, e)        # query through the key up-projection (absorbed)
             + b * h * mm(1, s, c)        # scores against the latent cache
             + b * h * mm(1, c, s)        # probabilities times the latent cache
             + b * h * mm(1, e, c)        # value up-projection after attention
             + mm(b, d, he))              # output projection
    return Floor(nbytes, flops, "flops of the absorbed form (no expanded keys or values)")


def mhc_decode(p: dict, elem: int = 2) -> Floor:
    b, n, d, h, e, s, f = p["B"], p["n"], p["D"], p["H"], p["E"], p["S"], p["F"]
    he = h * e
    conn_weights = n * d * (2 * n + n * n) + 2 * n + n * n
    nbytes = elem * (2 * b * n * d + 2 * conn_weights + 2 * d + d * he + 2 * b * h * s * e + he * d + 3 * d * f)
    per_connection = (mm(b, 2 * n + n * n, n * d)   # the three projections of the normalized streams
                      + b * mm(1, d, n)             # H_pre . x
                      + b * mm(n, d, n))            # H_res x
    flops = (2 * per_connection
             + mm(b, he, d) + b * h * (mm(1, s, e) + mm(1, e, s)) + mm(b, d, he)   # attention
             + 2 * mm(b, f, d) + mm(b, d, f))                                        # SwiGLU MLP
    return Floor(nbytes, flops)


def sliding_window_gqa_decode(p: dict, elem: int = 2) -> Floor:
    b, d, hq, hkv, e, s = p["B"], p["D"], p["Hq"], p["Hkv"], p["E"], p["S"]
    w = min(p["W"], s)
    nbytes = elem * (b * d + d * hq * e + 2 * b * hkv * w * e + hq * e * d + b * d)
    flops = mm(b, hq * e, d) + b * hq * (mm(1, w, e) + mm(1, e, w)) + mm(b, d, hq * e)
    return Floor(nbytes, flops, "only the window's keys and values")


def attention_sinks_decode(p: dict, elem: int = 2) -> Floor:
    b, d, h, e, s = p["B"], p["D"], p["H"], p["E"], p["S"]
    nbytes = elem * (b * d + d * h * e + 2 * b * h * s * e + h + h * e * d + b * d)
    flops = mm(b, h * e, d) + b * h * (mm(1, s, e) + mm(1, e, s)) + mm(b, d, h * e)
    return Floor(nbytes, flops)


def diff_attention_decode(p: dict, elem: int = 2) -> Floor:
    b, d, h, hd, s = p["B"], p["D"], p["H"], p["d"], p["S"]
    nbytes = elem * (b * d + d * 2 * h * hd + b * h * 2 * s * hd + b * h * s * 2 * hd + h + 2 * hd + 2 * h * hd * d
                     + b * d)
    flops = (mm(b, 2 * h * hd, d)
             + b * h * 2 * mm(1, s, hd)      # the two score maps
             + b * h * mm(1, 2 * hd, s)      # one product of the combined map with the values
             + mm(b, d, 2 * h * hd))
    return Floor(nbytes, flops, "one value product of the combined map")


FLOORS = {
    "rmsnorm_gated_mlp": rmsnorm_gated_mlp,
    "layernorm_gemm": layernorm_gemm,
    "lora": lora,
    "rmsnorm_swiglu_ffn": rmsnorm_swiglu_ffn,
    "gated_mlp": gated_mlp,
    "ngpt_update": ngpt_update,
    "qk_norm_projections": qk_norm_projections,
    "attention_decode": attention_decode,
    "attention_prefill": attention_prefill,
    "mla_qknorm_decode": mla_qknorm_decode,
    "mhc_decode": mhc_decode,
    "sliding_window_gqa_decode": sliding_window_gqa_decode,
    "attention_sinks_decode": attention_sinks_decode,
    "diff_attention_decode": diff_attention_decode,
}


def floor_of(workload: str, params: dict, elem: int = 2) -> Floor:
    if workload not in FLOORS:
        raise KeyError(f"no floor function for workload {workload!r}")
    return FLOORS[workload](params, elem)
