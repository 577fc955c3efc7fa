"""Translating a captured ATen graph to the IR text format.

The driver walks the graph in order. Each node's translator (ops.py, one
small function per ATen op) gets the node's arguments as ``Val``s and builds
IR terms through the helpers of ``Translator``: broadcasting, renames,
reductions, matmul, reshape. Dims are variables of a ``DimSolver`` and get
their names only when the text is printed (dims.py explains why).

A ``Val`` is one PyTorch tensor seen from the IR: its term, and per PyTorch
position the dim variable there (None for a size-1 dim: the IR has no size-1
dims and broadcasts by name). A position can be *missing*: the tensor has the
dim but the term does not (an ``expand``ed dim, a constant made by ``full``);
broadcasting by name supplies it wherever it meets a term that has the dim,
and ``materialize`` adds it where it must exist (outputs, merges).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, replace

import torch

from .capture import Graph, capture, identifier, source_of
from .dims import (
    PRIO_BATCH,
    PRIO_CONTRACTION,
    PRIO_DEFAULT,
    PRIO_REDUCTION,
    PRIO_ROWS_COLS,
    PRIO_SELF_ATTENTION,
    PRIO_SPLIT,
    DimSolver,
)
from .errors import FrontendError, UnsupportedOpError
from .expr import Dim, Expr, Lit, Ref, Term, dims_in, is_literal, literal_value, render, term
from .result import FrontendResult, InputInfo, OutputInfo

_DTYPES = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
    torch.int64: "i32",
    torch.int32: "i32",
    torch.int16: "i32",
    torch.int8: "i32",
    torch.uint8: "i32",
    torch.bool: "bool",
}
_FLOATS = ("f16", "bf16", "f32", "f64")

# Words the IR reads specially, and op names: never used as value names.
_RESERVED = frozenset(
    """program dims input let output const inf nan iota add sub mul div max2 min2 neg exp log sqrt rsqrt
    sigmoid silu gelu tanh pow cast lt le eq where reduce sum max matmul tile_matmul split merge rename
    partition replicate combine preduce collect tuple proj f16 bf16 f32 f64 i32 bool""".split()
)


# Prefixes for the lets a node's translation introduces ("attn_scores").
_SHORT_NAMES = {"scaled_dot_product_attention": "attn"}


def op_name(target) -> str:
    """'aten.cumsum' for torch.ops.aten.cumsum.default."""
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._opname}"
    return getattr(target, "__name__", str(target))


def ir_dtype(dtype: torch.dtype) -> str | None:
    return _DTYPES.get(dtype)


@dataclass(frozen=True)
class Unavailable:
    """A result the IR cannot produce (max's indices): an error only if used."""

    op: str
    message: str


@dataclass(frozen=True)
class Val:
    expr: Expr
    dims: tuple  # per PyTorch position: a dim variable, or None for size 1
    dtype: str | None  # IR dtype; None for a Python number
    missing: frozenset = frozenset()  # positions whose dim the term lacks

    @property
    def rank(self) -> int:
        return len(self.dims)

    def present(self) -> list[int]:
        """The dim variables the term has, in PyTorch order (its layout)."""
        return [d for p, d in enumerate(self.dims) if d is not None and p not in self.missing]

    @property
    def literal(self) -> bool:
        return is_literal(self.expr)


class Args:
    """A node's arguments by schema name, tensors as Vals."""

    def __init__(self, cx: "Translator", node: torch.fx.Node):
        schema = node.target._schema
        self._values = {}
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args) and not arg.kwarg_only:
                v = node.args[i]
            elif arg.name in node.kwargs:
                v = node.kwargs[arg.name]
            elif arg.has_default_value():
                v = arg.default_value
            else:
                v = None
            self._values[arg.name] = cx.convert(v)

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None


class Translator:
    """Translates one captured graph; ops.py's functions receive it as `cx`.

    Holds the dim solver, the lets emitted so far (in definition order), the
    IR inputs and the Val of every graph node."""

    def __init__(self, graph: Graph, name: str | None = None):
        self.graph = graph
        self.name = identifier(name, "program") if name else graph.name
        self.solver = DimSolver()
        self.lets: list[tuple[str, Expr]] = []
        self.inputs: list[tuple[str, str, list[int]]] = []  # (name, dtype, layout vars)
        self.values: dict[str, object] = {}
        # Roles for naming (see _attention_names): (rows, k, cols) of every
        # matmul and the dims softmax normalizes.
        self.matmuls: list[tuple] = []
        self.softmax_dims: list[int] = []
        self.taken: set[str] = set(_RESERVED)
        self.node: torch.fx.Node | None = None

    # ---- errors -------------------------------------------------------------------

    def unsupported(self, message: str | None = None) -> UnsupportedOpError:
        loc, src = source_of(self.node) if self.node is not None else ("", "")
        op = op_name(self.node.target) if self.node is not None else "?"
        # An operator of PyTorch's decomposition of what the user wrote
        # (torch.roll -> aten.fmod, aten.index_select): name the user's.
        origin = self.node.meta.get("original_aten") if self.node is not None else None
        if isinstance(origin, torch._ops.OpOverload) and origin != self.node.target:
            user_op = op_name(origin)
            if user_op != op:
                what = f"{op} {message}" if message else f"{op}, which the IR has no form for"
                return UnsupportedOpError(user_op, f"{user_op} is not supported: PyTorch decomposes it into {what}",
                                          loc, src)
        return UnsupportedOpError(op, f"{op} {message}" if message else None, loc, src)

    # ---- the current node -------------------------------------------------------------

    @property
    def meta(self):
        return self.node.meta.get("val")

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.meta.shape)

    @property
    def out_dtype(self) -> str:
        dt = ir_dtype(self.meta.dtype)
        if dt is None:
            raise self.unsupported(f"produces dtype {self.meta.dtype}, which the IR has no type for")
        return dt

    # ---- values -------------------------------------------------------------------------

    def convert(self, v):
        if isinstance(v, torch.fx.Node):
            out = self.values[v.name]
            if isinstance(out, Unavailable):
                loc, text = source_of(v)
                raise UnsupportedOpError(out.op, out.message, loc, text)
            return out
        if isinstance(v, (list, tuple)):
            return type(v)(self.convert(x) for x in v)
        return v

    def scalar(self, v) -> Val:
        return Val(Lit(float(v)), (), None)

    def val(self, v) -> Val:
        """A Val for a tensor argument or a Python number."""
        if isinstance(v, Val):
            return v
        if isinstance(v, (bool, int, float)):
            return self.scalar(v)
        raise self.unsupported(f"has an argument of type {type(v).__name__} where a tensor or number was expected")

    def make(self, expr: Expr, dims, dtype, missing=frozenset()) -> Val:
        """A new value; its term's dims become a group that must stay distinct."""
        v = Val(expr, tuple(dims), dtype, frozenset(missing))
        self.solver.add_group(v.present())
        return v

    def fresh(self, extent: int, hint: str | None = None, prio: int = PRIO_DEFAULT) -> int:
        return self.solver.fresh(extent, hint, prio)

    def hint(self, var, name: str, prio: int) -> None:
        if var is not None:
            self.solver.hint(var, name, prio)

    def let(self, v: Val, hint: str) -> Val:
        """Binds v's term to a fresh name (so it is shared, and readable)."""
        e = v.expr
        if not isinstance(e, Term) or e.op == "iota" or v.literal:
            return v
        name = self.fresh_name(hint)
        self.lets.append((name, e))
        return replace(v, expr=Ref(name))

    def fresh_name(self, hint: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
        if base[0].isdigit():
            base = "_" + base
        if base in _RESERVED:  # "exp_" rather than "exp_1", which PyTorch may use for another node
            base += "_"
        name, i = base, 1
        while name in self.taken:
            name = f"{base}{i}" if base.endswith("_") else f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name

    def sub_hint(self, what: str) -> str:
        """A name for a let inside one node's translation: "softmax_max"."""
        if self.node is None:
            return what
        name = self.node.name
        for long, short in _SHORT_NAMES.items():
            if name.startswith(long):
                name = short + name[len(long):]
        return f"{name}_{what}"

    # ---- dtypes -------------------------------------------------------------------------------

    def cast(self, v: Val, dtype: str) -> Val:
        if v.literal or v.dtype == dtype:
            return replace(v, dtype=dtype) if v.literal else v
        return self.make(term("cast", v.expr, attrs=(dtype,)), v.dims, dtype, v.missing)

    @staticmethod
    def common_dtype(vals) -> str | None:
        """PyTorch's promotion among the non-literal operands (float beats
        int beats bool; f16 with bf16 gives f32)."""
        dts = {v.dtype for v in vals if not v.literal and v.dtype is not None}
        floats = [d for d in _FLOATS if d in dts]
        if len(floats) > 1:
            order = {"f16": 1, "bf16": 1, "f32": 2, "f64": 3}
            best = max(floats, key=lambda d: order[d])
            return "f32" if order[best] == 1 else best
        if floats:
            return floats[0]
        if "i32" in dts:
            return "i32"
        return "bool" if "bool" in dts else None

    # ---- renames and broadcasting ---------------------------------------------------------

    def rename(self, v: Val, mapping: dict[int, int]) -> Val:
        """v with the dim at position p renamed to the variable mapping[p].

        The targets end up distinct from each other and from v's other dims;
        a rename whose target is still in use waits, and a cycle of them
        (x + x.T) goes through a temporary dim."""
        dims = list(v.dims)
        expr = v.expr
        moves = []
        for p, target in mapping.items():
            if p in v.missing:
                dims[p] = target  # the term has no such dim: nothing to rename
            else:
                moves.append((p, target))
        while moves:
            live = {self.solver.find(d) for q, d in enumerate(dims) if d is not None and q not in v.missing}
            ready = [i for i, (_, t) in enumerate(moves) if self.solver.find(t) not in live]
            if ready:
                p, target = moves.pop(ready[0])
            else:
                p, target = moves[0][0], self.fresh(self.solver.extent(dims[moves[0][0]]))
            src = dims[p]
            if isinstance(expr, Term) and expr.op == "iota":
                expr = term("iota", attrs=(Dim(target),))
            else:
                expr = term("rename", expr, attrs=(Dim(src), Dim(target)))
                self.solver.add_group([src, target])  # (rename d d X) would be meaningless
            dims[p] = target
            self.solver.add_group([d for q, d in enumerate(dims) if d is not None and q not in v.missing])
        return Val(expr, tuple(dims), v.dtype, v.missing)

    def align(self, vals: list[Val], where: list[list], npos: int):
        """Unifies the operands' dims that land in one result position.

        where[i][q] is the result position of operand i's position q. Picks one
        dim per result position, unifies the operands' dims with it, and where
        unifying would give some tensor two equal dims, renames the operand's
        dim instead. Returns (operands, dim variable per result position).
        """
        at: list[list] = [[] for _ in range(npos)]
        for v, w in zip(vals, where):
            for q, p in enumerate(w):
                if v.dims[q] is not None:
                    at[p].append(v.dims[q])
        targets: list = []
        for p in range(npos):
            t = None
            for c in at[p]:
                if all(u is None or not self.solver.same(c, u) for u in targets):
                    t = c
                    break
            if t is None and at[p]:
                t = self.fresh(self.solver.extent(at[p][0]))
            targets.append(t)
        self.solver.add_group([t for t in targets if t is not None])
        out = []
        for v, w in zip(vals, where):
            mapping = {}
            for q, p in enumerate(w):
                c = v.dims[q]
                if c is None or self.solver.same(c, targets[p]):
                    continue
                if q in v.missing or not self.solver.try_unify(c, targets[p]):
                    mapping[q] = targets[p]
            out.append(self.rename(v, mapping) if mapping else v)
        return out, targets

    def broadcast(self, vals: list[Val]):
        """PyTorch broadcasting (aligned from the right). Returns the operands
        (renamed where needed), the result dims and the result's missing positions."""
        rank = max((v.rank for v in vals), default=0)
        vals, targets = self.align(vals, [[rank - v.rank + q for q in range(v.rank)] for v in vals], rank)
        missing = set()
        for p in range(rank):
            if targets[p] is None:
                continue
            has = False
            for v in vals:
                q = p - (rank - v.rank)
                if q >= 0 and v.dims[q] is not None and q not in v.missing:
                    has = True
            if not has:
                missing.add(p)
        return vals, tuple(targets), frozenset(missing)

    def pointwise(self, op: str, *args, dtype: str | None = None, attrs: tuple = (),
                  result_dtype: str | None = None) -> Val:
        """op applied elementwise; non-literal operands are cast to dtype
        (default: the node's dtype); the result has result_dtype (default dtype)."""
        vals = [self.val(a) for a in args]
        dtype = dtype or self.out_dtype
        vals = [self.cast(v, dtype) for v in vals]
        vals, dims, missing = self.broadcast(vals)
        return self.make(term(op, *(v.expr for v in vals), attrs=attrs), dims, result_dtype or dtype, missing)

    def compare(self, op: str, a, b) -> Val:
        a, b = self.val(a), self.val(b)
        dtype = self.common_dtype([a, b]) or "f32"
        return self.pointwise(op, a, b, dtype=dtype, result_dtype="bool")

    def where(self, cond, a, b) -> Val:
        cond, a, b = self.val(cond), self.val(a), self.val(b)
        dtype = self.out_dtype
        c = literal_value(cond.expr) if cond.literal else None
        if c is not None:  # a constant condition (PyTorch's lerp decomposition: where(0.25 < 0.5, ...))
            return self.cast(self.pick(a if c else b, [cond, a, b]), dtype)
        if a.literal and b.literal:  # give the result a dtype: cast one branch
            a = Val(term("cast", a.expr, attrs=(dtype,)), a.dims, dtype, a.missing)
        vals, dims, missing = self.broadcast([self.cast(cond, "bool"), self.cast(a, dtype), self.cast(b, dtype)])
        return self.make(term("where", *(v.expr for v in vals)), dims, dtype, missing)

    def pick(self, chosen: Val, operands) -> Val:
        """chosen's term with the dims of the operands' broadcast (an operator
        that returned one operand unchanged, like `true and b`)."""
        vals, dims, _ = self.broadcast(list(operands))
        i = next(i for i, v in enumerate(operands) if v is chosen)
        v = vals[i]
        offset = len(dims) - v.rank
        has = {offset + q for q, d in enumerate(v.dims) if d is not None and q not in v.missing}
        missing = {p for p, d in enumerate(dims) if d is not None and p not in has}
        return Val(v.expr, dims, v.dtype, frozenset(missing))

    # ---- bools (the IR has where and comparisons, no and/or/not) ------------------------------

    def logical_and(self, a: Val, b: Val) -> Val:
        a, b = self.cast(self.val(a), "bool"), self.cast(self.val(b), "bool")
        lit, other = (a, b) if literal_value(a.expr) is not None else (b, a)
        if literal_value(lit.expr) is not None:
            return self.pick(other if literal_value(lit.expr) else lit, [a, b])
        return self.pointwise("where", a, b, a, dtype="bool")  # a ? b : false

    def logical_or(self, a: Val, b: Val) -> Val:
        a, b = self.cast(self.val(a), "bool"), self.cast(self.val(b), "bool")
        lit, other = (a, b) if literal_value(a.expr) is not None else (b, a)
        if literal_value(lit.expr) is not None:
            return self.pick(lit if literal_value(lit.expr) else other, [a, b])
        return self.pointwise("where", a, a, b, dtype="bool")  # a ? true : b

    def logical_not(self, a: Val) -> Val:
        a = self.val(a)
        value = literal_value(a.expr)
        if value is not None:
            return replace(a, expr=Lit(0.0 if value else 1.0), dtype="bool")
        as_int = self.cast(a, "i32")
        return self.pointwise("eq", as_int, 0, dtype="i32", result_dtype="bool")

    # ---- index masks ---------------------------------------------------------------------------

    def index(self, v: Val, p: int) -> Val:
        """The index along v's position p, as an i32 value aligned with v."""
        p = p % v.rank
        d = v.dims[p]
        if d is None:
            return self.scalar(0)
        dims = [None] * v.rank
        dims[p] = d
        return self.make(term("iota", attrs=(Dim(d),)), dims, "i32")

    # ---- making dims exist -------------------------------------------------------------------

    def materialize(self, v: Val, positions=None) -> Val:
        """v with its missing positions (or the given ones) present in the term."""
        need = sorted(v.missing if positions is None else set(positions) & v.missing)
        if not need:
            return v
        zero = None
        for p in need:
            z = term("mul", term("iota", attrs=(Dim(v.dims[p]),)), Lit(0.0))
            zero = z if zero is None else term("add", zero, z)
        dtype = v.dtype or self.out_dtype
        if dtype == "bool":
            e = v.expr if not v.literal else term("cast", v.expr, attrs=("bool",))
            expr = term("where", term("eq", zero, Lit(0.0)), e, e)
        else:
            zero_t = zero if dtype == "i32" else term("cast", zero, attrs=(dtype,))
            expr = term("add", v.expr, zero_t)
        return self.make(expr, v.dims, dtype, v.missing - set(need))

    # ---- reductions --------------------------------------------------------------------------------

    def positions(self, v: Val, dims) -> list[int]:
        """Normalized, sorted positions; None or [] means all."""
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            return list(range(v.rank))
        if isinstance(dims, int):
            dims = [dims]
        return sorted({d % v.rank for d in dims}) if v.rank else []

    def count(self, v: Val, positions) -> int:
        n = 1
        for p in positions:
            if v.dims[p] is not None:
                n *= self.solver.extent(v.dims[p])
        return n

    def reduce(self, v: Val, positions, kind: str, keepdim: bool = False) -> Val:
        """sum / max / min of v over positions. A missing position needs no
        term: the value is constant along it (sum multiplies by the extent)."""
        expr, factor = v.expr, 1
        for p in positions:
            d = v.dims[p]
            if d is None:
                continue
            self.hint(d, "k", PRIO_REDUCTION)
            if p in v.missing:
                if kind == "sum":
                    factor *= self.solver.extent(d)
                continue
            if kind == "sum":
                expr = term("sum", expr, attrs=(Dim(d),))
            elif kind == "max":
                expr = term("max", expr, attrs=(Dim(d),))
            else:  # min(d, x) = -max(d, -x)
                expr = term("neg", term("max", term("neg", expr), attrs=(Dim(d),)))
        if factor != 1:
            expr = term("mul", expr, Lit(float(factor)))
        return self._drop_positions(v, expr, positions, keepdim)

    def _drop_positions(self, v: Val, expr, positions, keepdim) -> Val:
        dims, missing = [], set()
        for p, d in enumerate(v.dims):
            if p in positions:
                if keepdim:
                    dims.append(None)
                continue
            if p in v.missing:
                missing.add(len(dims))
            dims.append(d)
        return self.make(expr, dims, v.dtype, missing)

    def mean(self, v: Val, positions, keepdim: bool = False) -> Val:
        s = self.reduce(v, positions, "sum", keepdim)
        n = self.count(v, positions)
        return s if n == 1 else replace(s, expr=term("div", s.expr, Lit(float(n))))

    def variance(self, v: Val, positions, correction: float, keepdim: bool) -> Val:
        """Mean of squared deviations, divided by N - correction."""
        mu = self.let(self.mean(v, positions, keepdim=True), self.sub_hint("mean"))
        dev = self.let(self.pointwise("sub", v, mu, dtype=v.dtype), self.sub_hint("dev"))
        sq = self.pointwise("mul", dev, dev, dtype=v.dtype)
        s = self.reduce(sq, positions, "sum", keepdim)
        n = self.count(v, positions) - correction
        return replace(s, expr=term("div", s.expr, Lit(float(n))))

    # ---- layout -------------------------------------------------------------------------------------

    def permute(self, v: Val, perm) -> Val:
        perm = [p % v.rank for p in perm]
        return Val(v.expr, tuple(v.dims[p] for p in perm), v.dtype, frozenset(perm.index(p) for p in v.missing))

    def transpose(self, v: Val, a: int, b: int) -> Val:
        perm = list(range(v.rank))
        if v.rank:
            a, b = a % v.rank, b % v.rank
            perm[a], perm[b] = perm[b], perm[a]
        return self.permute(v, perm)

    def unsqueeze(self, v: Val, p: int) -> Val:
        p = p % (v.rank + 1)
        dims = list(v.dims)
        dims.insert(p, None)
        return Val(v.expr, tuple(dims), v.dtype, frozenset(q + (q >= p) for q in v.missing))

    def expand(self, v: Val, shape) -> Val:
        """Size-1 dims stretched and new leading dims: missing positions."""
        lead = len(shape) - v.rank
        dims = [None if s == 1 else self.fresh(s) for s in shape[:lead]]
        missing = {p for p, d in enumerate(dims) if d is not None}
        for q, d in enumerate(v.dims):
            p = lead + q
            if d is None and shape[p] != 1:
                dims.append(self.fresh(shape[p]))
                missing.add(p)
            else:
                dims.append(d)
                if q in v.missing:
                    missing.add(p)
        return Val(v.expr, tuple(dims), v.dtype, frozenset(missing))

    def reshape(self, v: Val, shape) -> Val:
        """view/reshape: runs of dims with equal products map to each other;
        one dim to several is a split, several to one a merge (both in
        PyTorch's order: the first dim is the outer one)."""
        shape = [int(s) for s in shape]
        ins = [p for p, d in enumerate(v.dims) if d is not None]
        outs = [j for j, s in enumerate(shape) if s != 1]
        groups, i, j = [], 0, 0
        while i < len(ins) or j < len(outs):
            gi, gj = [ins[i]], [outs[j]]
            pi, pj = self.solver.extent(v.dims[ins[i]]), shape[outs[j]]
            i, j = i + 1, j + 1
            while pi != pj:
                if pi < pj:
                    pi *= self.solver.extent(v.dims[ins[i]])
                    gi.append(ins[i])
                    i += 1
                else:
                    pj *= shape[outs[j]]
                    gj.append(outs[j])
                    j += 1
            groups.append((gi, gj))
        # A merge needs its dims in the term: make partly missing groups whole.
        partly = [p for gi, gj in groups if len(gi) + len(gj) > 2 and not all(q in v.missing for q in gi)
                  for p in gi]
        v = self.materialize(v, partly)
        dims: list = [None] * len(shape)
        missing: set[int] = set()
        expr = v.expr
        live = v.present()

        def step(removed, added):
            for d in removed:
                live.remove(d)
            live.extend(added)
            self.solver.add_group(live)

        for gi, gj in groups:
            if len(gi) == 1 and len(gj) == 1:
                dims[gj[0]] = v.dims[gi[0]]
                if gi[0] in v.missing:
                    missing.add(gj[0])
                continue
            if all(p in v.missing for p in gi):  # nothing in the term to reshape
                for q in gj:
                    dims[q] = self.fresh(shape[q])
                    missing.add(q)
                continue
            merged = v.dims[gi[0]]
            for p in gi[1:]:
                inner = v.dims[p]
                m = self.fresh(self.solver.extent(merged) * self.solver.extent(inner))
                expr = term("merge", expr, attrs=(Dim(merged), Dim(inner), Dim(m)))
                step([merged, inner], [m])
                self.solver.add_group([merged, m])
                self.solver.add_group([inner, m])
                merged = m
            pieces = [self.fresh(shape[q]) for q in gj] if len(gj) > 1 else [merged]
            rest = merged
            for k in range(len(pieces) - 1):
                last = k == len(pieces) - 2
                inner = pieces[k + 1] if last else self.fresh(math.prod(shape[q] for q in gj[k + 1:]))
                expr = term("split", expr, attrs=(Dim(rest), Dim(pieces[k]), Dim(inner)))
                step([rest], [pieces[k], inner])
                self.solver.add_group([rest, pieces[k]])
                self.solver.add_group([rest, inner])
                rest = inner
            if len(pieces) > 1:
                at_end = all(shape[q] == 1 for q in range(gj[-1] + 1, len(shape)))
                for k, piece in enumerate(pieces):
                    if at_end:  # (..., H*E) -> (..., H, E): heads
                        self.hint(piece, "e" if k == len(pieces) - 1 else "h", PRIO_SPLIT)
                    elif k == 0:
                        self.hint(piece, "b", PRIO_BATCH)
            for q, piece in zip(gj, pieces):
                dims[q] = piece
        return self.make(expr, dims, v.dtype, missing)

    # ---- contraction ---------------------------------------------------------------------------------

    def matmul(self, a: Val, b: Val) -> Val:
        """torch.matmul: 1-D operands, broadcast batch dims, contraction of
        a's last dim with b's second-to-last."""
        dtype = self.out_dtype
        a, b = self.cast(self.val(a), dtype), self.cast(self.val(b), dtype)
        a_vec, b_vec = a.rank == 1, b.rank == 1
        if a_vec:
            a = self.unsqueeze(a, 0)
        if b_vec:
            b = self.unsqueeze(b, -1)
        nb = max(a.rank, b.rank) - 2
        # Result positions: batch..., rows, k, cols.
        where_a = [nb - (a.rank - 2) + q for q in range(a.rank - 2)] + [nb, nb + 1]
        where_b = [nb - (b.rank - 2) + q for q in range(b.rank - 2)] + [nb + 1, nb + 2]
        a_rows, b_cols = a.dims[-2], b.dims[-1]
        self_attention = a_rows is not None and b_cols is not None and self.solver.same(a_rows, b_cols)
        (a, b), targets = self.align([a, b], [where_a, where_b], nb + 3)
        batch, rows, k, cols = targets[:nb], targets[nb], targets[nb + 1], targets[nb + 2]
        if self_attention:
            # q @ k.T with both rows from one sequence dim: the keys' copy became
            # its own dim; name the pair like DESIGN §2.1 does.
            self.hint(rows, "s", PRIO_SELF_ATTENTION)
            self.hint(cols, "t", PRIO_SELF_ATTENTION)
        for i, d in enumerate(batch):
            self.hint(d, "h" if nb > 1 and i == nb - 1 else "b", PRIO_BATCH)
        self.hint(rows, "m", PRIO_ROWS_COLS)
        self.hint(cols, "n", PRIO_ROWS_COLS)
        self.hint(k, "k", PRIO_CONTRACTION)
        self.matmuls.append((rows, k, cols))
        if k is None:  # contraction over a size-1 dim: an outer product
            expr = term("mul", a.expr, b.expr)
        else:
            a = self.materialize(a, [a.rank - 1])
            b = self.materialize(b, [b.rank - 2])
            expr = term("matmul", a.expr, b.expr, attrs=(Dim(k),))
        dims = list(batch) + ([] if a_vec else [rows]) + ([] if b_vec else [cols])
        has = {self.solver.find(d) for d in a.present() + b.present()}
        missing = {p for p, d in enumerate(dims) if d is not None and self.solver.find(d) not in has}
        return self.make(expr, dims, dtype, missing)

    # ---- the driver -----------------------------------------------------------------------------------

    def run(self) -> FrontendResult:
        from .ops import IGNORED, TABLE

        g = self.graph
        program = g.program
        specs = {s.placeholder: s for s in g.inputs}
        for s in g.inputs:
            self.taken.add(s.name)
        input_infos: list[tuple] = []
        for node in program.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                self.values[node.name] = self._placeholder(node, specs.get(node.name), input_infos)
            elif node.op == "call_function":
                target = node.target
                if target is operator.getitem:
                    self.values[node.name] = self.values[node.args[0].name][node.args[1]]
                    continue
                if target in IGNORED:
                    self.values[node.name] = None
                    continue
                fn = TABLE.get(target)
                if fn is None:
                    raise self.unsupported()
                out = fn(self, Args(self, node))
                if isinstance(out, Val):
                    out = self._finish(node, out)
                elif isinstance(out, tuple):  # several results, taken apart by getitem nodes
                    out = tuple(self.let(v, f"{node.name}_{i}") if isinstance(v, Val) else v
                                for i, v in enumerate(out))
                self.values[node.name] = out
            elif node.op == "output":
                return self._result(node, input_infos)
            else:
                raise FrontendError(f"graph node {node.name} ({node.op}) is not supported")
        raise FrontendError("the captured graph has no output")

    def _placeholder(self, node, spec, input_infos) -> Val | None:
        meta = node.meta.get("val")
        if spec is None:
            return None  # a number specialized into the graph
        dtype = ir_dtype(spec.dtype)
        if dtype is None:
            raise FrontendError(f"input {spec.name} has dtype {spec.dtype}, which the IR has no type for")
        if spec.kind == "constant" and len(spec.shape) == 0:
            value = self.graph.program.constants[spec.source]
            return Val(Lit(float(value)), (), dtype)
        dims = [None if s == 1 else self.fresh(s) for s in meta.shape]
        v = self.make(Ref(spec.name), dims, dtype)
        self.inputs.append((spec.name, dtype, v.present()))
        input_infos.append((spec, v))
        return v

    def _finish(self, node, v: Val) -> Val:
        """Checks the translation against the node's shape, gives it the
        node's dtype, and names it."""
        meta = node.meta.get("val")
        if isinstance(meta, torch.Tensor):
            shape = tuple(int(s) for s in meta.shape)
            ok = len(v.dims) == len(shape) and all(
                (d is None and s == 1) or (d is not None and self.solver.extent(d) == s)
                for d, s in zip(v.dims, shape)
            )
            if not ok:
                got = tuple(1 if d is None else self.solver.extent(d) for d in v.dims)
                raise FrontendError(
                    f"internal error: {op_name(node.target)} translated to shape {got}, PyTorch says {shape}",
                    *source_of(node),
                )
            dtype = self.out_dtype
            if v.dtype != dtype:
                v = self.cast(v, dtype)
                if v.literal:
                    v = replace(v, dtype=dtype)
        return self.let(v, node.name)

    def _result(self, out_node, input_infos) -> FrontendResult:
        program = self.graph.program
        kinds = torch.export.graph_signature.OutputKind
        user = []
        for spec, arg in zip(program.graph_signature.output_specs, out_node.args[0]):
            if spec.kind != kinds.USER_OUTPUT:
                what = getattr(spec, "target", None) or spec.arg.name
                raise FrontendError(f"the program updates {what} in place; the IR has no mutation")
            user.append(arg)
        outputs = []
        names = ["out"] if len(user) == 1 else [f"out{i}" for i in range(len(user))]
        for name, arg in zip(names, user):
            v = self.values.get(arg.name) if isinstance(arg, torch.fx.Node) else None
            meta = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
            if isinstance(v, Unavailable):
                raise UnsupportedOpError(v.op, v.message, *source_of(arg))
            if not isinstance(v, Val) or not isinstance(meta, torch.Tensor):
                raise FrontendError(f"output {name} is not a tensor; the front end returns tensors only")
            self.node = arg if arg.op == "call_function" else None
            v = self.materialize(v) if v.missing else v
            if v.literal:
                v = Val(term("cast", v.expr, attrs=(ir_dtype(meta.dtype),)), v.dims, ir_dtype(meta.dtype))
            outputs.append((self.fresh_name(name), self._unmerged(v), meta))
        return self._emit(input_infos, outputs)

    def _unmerged(self, v: Val) -> Val:
        """An output that merges two dims of a computed value is that value,
        laid out with the two dims in the merged one's place: row-major, it is
        the same memory, and the binding's reshape to the user's shape is free.
        The IR output of a merge is a copy kernel of its own (an output is a
        kernel's result, not a view of one), and a kernel with a grid over the
        merged dim cannot hold a reduction over the inner one (per-head norms
        before `reshape(t, h * e)`)."""
        lets = dict(self.lets)
        inputs = {name for name, _, _ in self.inputs}
        layout = v.present()
        e = v.expr
        while True:
            while isinstance(e, Ref) and e.name in lets:
                e = lets[e.name]
            if not (isinstance(e, Term) and e.op == "merge"):
                break
            inner = e.args[0]
            if isinstance(inner, Ref) and inner.name in inputs:
                break  # the output would be an input: the merge stays (a copy)
            outer_dim, inner_dim, merged = (a.var for a in e.attrs)
            found = [self.solver.find(d) for d in layout]
            if self.solver.find(merged) not in found:
                break
            at = found.index(self.solver.find(merged))
            layout = layout[:at] + [outer_dim, inner_dim] + layout[at + 1:]
            v = Val(inner, tuple(layout), v.dtype)
            e = inner
        return v

    def _attention_names(self) -> None:
        """Scores are a matmul whose columns a softmax normalizes and a second
        matmul contracts: name them like DESIGN's attention (queries s, keys t,
        head dim e, value dim f), whoever wrote the attention."""
        same = self.solver.same
        for rows, k, cols in self.matmuls:
            if cols is None or not any(same(cols, d) for d in self.softmax_dims):
                continue
            for _, k2, cols2 in self.matmuls:
                if k2 is not None and same(k2, cols):
                    for var, name in ((rows, "s"), (cols, "t"), (k, "e"), (cols2, "f")):
                        self.hint(var, name, PRIO_SELF_ATTENTION)

    def _emit(self, input_infos, outputs) -> FrontendResult:
        self._attention_names()
        used: set[int] = set()
        for _, _, layout in self.inputs:
            used.update(layout)
        for _, e in self.lets:
            dims_in(e, used)
        for _, v, _ in outputs:
            used.update(v.present())
            dims_in(v.expr, used)
        names = self.solver.names(used, self.taken)
        find = self.solver.find

        def dim_name(var: int) -> str:
            return names[find(var)]

        roots = sorted({find(v) for v in used})
        lines = [f"(program {self.name}"]
        lines.append("  (dims " + " ".join(f"({names[r]} {self.solver.extent(r)})" for r in roots) + ")")
        order = {s.name: i for i, s in enumerate(self.graph.inputs)}
        for name, dtype, layout in sorted(self.inputs, key=lambda i: order[i[0]]):
            lines.append(f"  (input {name} {dtype} [{' '.join(dim_name(d) for d in layout)}])")
        for name, e in self.lets:
            lines.append(f"  (let {name} {render(e, dim_name)})")
        out_infos = []
        for name, v, meta in outputs:
            layout = [dim_name(d) for d in v.present()]
            lines.append(f"  (output {name} [{' '.join(layout)}] {render(v.expr, dim_name)})")
            out_infos.append(OutputInfo(name, tuple(int(s) for s in meta.shape), meta.dtype, tuple(layout)))
        lines[-1] += ")"
        in_infos = []
        for spec, v in input_infos:
            layout = tuple(dim_name(d) for d in v.present())
            ir_shape = tuple(self.solver.extent(d) for d in v.present())
            in_infos.append(InputInfo(spec.name, spec.kind, spec.source, spec.shape, spec.dtype, layout, ir_shape))
        in_infos.sort(key=lambda i: order[i.name])
        return FrontendResult(
            text="\n".join(lines) + "\n",
            name=self.name,
            inputs=in_infos,
            outputs=out_infos,
            dims={names[r]: self.solver.extent(r) for r in roots},
            graph=self.graph,
            out_spec=self.graph.program.call_spec.out_spec,
            constant_args=dict(self.graph.constant_args),
        )


def translate(graph: Graph, name: str | None = None) -> FrontendResult:
    """The IR program of a captured graph."""
    return Translator(graph, name).run()


def to_ir(fn_or_module, *example_inputs, name: str | None = None, strict: bool = True) -> FrontendResult:
    """Captures fn_or_module on example_inputs and translates it to IR text.

    Raises UnsupportedOpError (naming the op and the user's source line) for
    operations the IR cannot express, FrontendError for other problems.
    """
    return translate(capture(fn_or_module, *example_inputs, strict=strict, name=name), name)
