"""Running a tuned program: binding arguments, the lean launch path, CUDA graphs.

Three layers, each optional above the first:

- ``Binding`` turns a call's arguments into the emitted module's inputs (IR
  layout, declared order; module parameters bound once, as views, so in-place
  updates are seen) and its outputs back into the user's shapes and pytree.
- ``ModuleRunner`` calls the module's ``forward`` with the tuned launch
  parameters: Triton's normal launch path (~30 µs of host time per kernel on
  an H200 with a dozen arguments, DESIGN §7).
- ``LeanRunner`` launches the compiled kernels directly: it records one
  ``forward`` call, keeps each kernel's compiled handle and its arguments with
  every constant already bound, and on later calls only allocates the output
  and intermediate buffers and splices the tensors in. Calls whose inputs
  differ from the recorded ones in shape, dtype, strides, device or 16-byte
  alignment (what Triton specializes on) take the normal path. While a CUDA
  graph is being captured, kernels that share no written buffer go on side
  streams (``streams.plan_streams``), so the graph runs them side by side;
  launched eagerly they stay on the caller's stream, where the events would
  cost more host time than the overlap saves.
- ``GraphRunner`` replays the whole program as one CUDA graph (static shapes):
  inputs are copied into the graph's own buffers unless they are those
  buffers, and the returned tensors are the graph's outputs, overwritten by
  the next call.

Kernel launches are recorded by putting a recorder in place of each kernel in
the module's namespace for one call (the emitted ``forward`` looks kernels up
there); the recording also gives per-kernel timing and which buffers each
kernel reads and writes, for reports.
"""

from __future__ import annotations

import os
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .loader import is_interpreted, kernels_of
from .streams import StreamPlan, new_side_streams, run_plan, side_stream_plan

# ---- binding a call's arguments ------------------------------------------------------


class BindingError(TypeError):
    """A call whose arguments do not match the program that was optimized."""


# The IR's one integer type is i32 (the front end maps every integer dtype to
# it): integer inputs of other dtypes are converted for the module, and int64
# values past int32's range are refused rather than wrapped.
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _module_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the emitted module takes for a tensor of `dtype`."""
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return dtype
    return torch.int32


class Binding:
    """Arguments → module inputs and module outputs → the user's results, from
    the front end's description of the program (``FrontendResult``)."""

    def __init__(self, frontend_result):
        fe = frontend_result
        self.name = fe.name
        self.inputs = list(fe.inputs)
        self.outputs = list(fe.outputs)
        self.out_spec = fe.out_spec
        self.constant_args = dict(fe.constant_args)
        self.num_args = 1 + max([i.source for i in fe.inputs if i.kind == "arg"] + list(self.constant_args) + [-1])
        graph = fe.graph
        state: dict[str, torch.Tensor] = {}
        if graph is not None and graph.module is not None:
            state = dict(graph.module.named_parameters(remove_duplicate=False))
            state.update(graph.module.named_buffers(remove_duplicate=False))
        # Per IR input: ("arg", index, ir_shape) or ("bound", tensor view).
        self._plan: list[tuple[str, Any, tuple[int, ...]]] = []
        for info in self.inputs:
            if info.kind == "arg":
                self._plan.append(("arg", info.source, tuple(info.ir_shape)))
                continue
            if info.kind in ("parameter", "buffer"):
                t = state[info.source] if info.source in state else graph.program.state_dict[info.source]
            else:
                t = graph.program.constants[info.source]
            t = t.detach().reshape(info.ir_shape)
            if t.dtype != _module_dtype(t.dtype):  # an integer parameter or constant, converted once
                t = t.to(_module_dtype(t.dtype))
            self._plan.append(("bound", t, tuple(info.ir_shape)))
        self._arg_shapes = {i.source: (tuple(i.shape), i.dtype) for i in self.inputs if i.kind == "arg"}
        self._arg_names = {i.source: i.name for i in self.inputs if i.kind == "arg"}
        # The device the program was optimized for: that of the first
        # arguments checked (optimize checks its example inputs first).
        self.device: torch.device | None = None

    def check_args(self, args: tuple) -> None:
        if len(args) != self.num_args:
            raise BindingError(f"{self.name}: expected {self.num_args} positional arguments, got {len(args)}")
        for index, value in self.constant_args.items():
            if args[index] != value:
                raise BindingError(
                    f"{self.name}: argument {index} is {args[index]!r}, but the program was optimized for "
                    f"{value!r} (numbers are specialized into the program)"
                )
        for index, (shape, dtype) in self._arg_shapes.items():
            t = args[index]
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or t.dtype != dtype:
                got = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__
                raise BindingError(
                    f"{self.name}: argument {index} is {got}, but the program was optimized for {shape} {dtype}; "
                    "optimize again for other shapes"
                )
            name = f"argument {index} ({self._arg_names[index]})"
            if t.device.type == "meta":
                raise BindingError(f"{self.name}: {name} is on the meta device: it has no values to compute with")
            if self.device is None:
                self.device = t.device
            elif t.device != self.device:
                raise BindingError(f"{self.name}: {name} is on {t.device}, but the program was optimized for "
                                   f"{self.device}; move it there or optimize again for {t.device}")
            if t.dtype == torch.int64 and t.numel() and (int(t.min()) < _I32_MIN or int(t.max()) > _I32_MAX):
                raise BindingError(f"{self.name}: {name} holds int64 values outside the range of int32, which "
                                   "the optimized program computes integers in")

    def bound_mask(self) -> list[bool]:
        """Per module input: whether it is the same tensor on every call."""
        return [kind == "bound" for kind, _, _ in self._plan]

    def module_inputs(self, args: tuple) -> list[torch.Tensor]:
        """The emitted module's inputs for a call (checked by check_args first)."""
        out = []
        for kind, src, ir_shape in self._plan:
            if kind != "arg":
                out.append(src)
                continue
            t = args[src].reshape(ir_shape)
            out.append(t if t.dtype == _module_dtype(t.dtype) else t.to(_module_dtype(t.dtype)))
        return out

    def user_outputs(self, values) -> Any:
        flat = []
        for info, t in zip(self.outputs, values):
            if tuple(t.shape) != info.shape:
                t = t.reshape(info.shape)
            if t.dtype != info.dtype:
                t = t.to(info.dtype)
            flat.append(t)
        if self.out_spec is None:
            return tuple(flat)
        return torch.utils._pytree.tree_unflatten(flat, self.out_spec)

    def flat_outputs(self, result) -> list[torch.Tensor]:
        """The eager program's result, flattened in the order of the IR's outputs."""
        flat, _ = torch.utils._pytree.tree_flatten(result)
        return flat


# ---- recording kernel launches -------------------------------------------------------


@dataclass
class LaunchRecord:
    kernel: str                   # name in the module
    jit: Any                      # the JITFunction / InterpretedFunction
    grid: tuple
    args: tuple
    kwargs: dict
    compiled: Any = None          # the CompiledKernel a GPU launch returned
    host_seconds: float = 0.0     # wall time of the launch call (CPU: the kernel's run)


class _Recorder:
    def __init__(self, name: str, jit: Any, out: list[LaunchRecord]):
        self.name, self.jit, self.out = name, jit, out

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            start = time.perf_counter()
            compiled = self.jit[grid](*args, **kwargs)
            self.out.append(LaunchRecord(self.name, self.jit, tuple(grid), args, kwargs, compiled,
                                         time.perf_counter() - start))
            return compiled

        return launch


_RECORD_LOCK = threading.Lock()


def record_launches(module: types.ModuleType, inputs: list[torch.Tensor], params: dict
                    ) -> tuple[tuple, list[LaunchRecord]]:
    """Runs forward once, recording every kernel launch in order."""
    records: list[LaunchRecord] = []
    with _RECORD_LOCK:
        kernels = kernels_of(module)
        try:
            for name, jit in kernels.items():
                setattr(module, name, _Recorder(name, jit, records))
            outputs = module.forward(*inputs, **params)
        finally:
            for name, jit in kernels.items():
                setattr(module, name, jit)
    return tuple(outputs), records


@dataclass
class BufferUse:
    """Which tensors a recorded kernel read or wrote, by role."""

    inputs: list[int] = field(default_factory=list)         # module input indices
    outputs: list[int] = field(default_factory=list)        # output indices
    intermediates: list[int] = field(default_factory=list)  # intermediate buffer indices


def buffer_uses(records: list[LaunchRecord], inputs: list[torch.Tensor], outputs: tuple
                ) -> tuple[list[BufferUse], list[str]]:
    """Per launch, the program's tensors it was given (inputs, outputs, and
    intermediates numbered in order of first use), found by storage pointer;
    and a name per intermediate: the kernel parameter it was first passed as
    (`states_0_ptr` -> `states_0`)."""
    in_ids = {id(t): i for i, t in enumerate(inputs)}
    out_keys = {_view_key(t): i for i, t in enumerate(outputs)}
    mid_keys: dict[tuple, int] = {}
    mid_names: list[str] = []
    uses = []
    for r in records:
        u = BufferUse()
        params = list(getattr(r.jit, "arg_names", []))
        named = list(zip(params, r.args)) + list(r.kwargs.items())
        for i, a in enumerate(list(r.args) + list(r.kwargs.values())):
            if not isinstance(a, torch.Tensor):
                continue
            k = _view_key(a)
            if id(a) in in_ids:
                u.inputs.append(in_ids[id(a)])
            elif k in out_keys:
                u.outputs.append(out_keys[k])
            else:
                if k not in mid_keys:
                    mid_keys[k] = len(mid_keys)
                    param = named[i][0] if i < len(named) else ""
                    name = (param[: -len("_ptr")] if param.endswith("_ptr") else param) or "buffer"
                    if name in mid_names:
                        name = f"{name}#{mid_keys[k]}"
                    mid_names.append(name)
                u.intermediates.append(mid_keys[k])
        uses.append(u)
    return uses, mid_names


# ---- runners -------------------------------------------------------------------------


class ModuleRunner:
    """Triton's normal launch path: the module's forward with the tuned parameters."""

    kind = "triton"

    def __init__(self, module: types.ModuleType, params: dict):
        self.module, self.params = module, dict(params)
        self.forward = module.forward

    def __call__(self, *inputs):
        return self.forward(*inputs, **self.params)


class LeanPathUnavailable(RuntimeError):
    """The lean launch path cannot be built for this program or Triton version."""


def _view_key(t: torch.Tensor) -> tuple:
    """A tensor's place in memory: storage, offset, shape, strides, dtype."""
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


# Whether the lean path (and a partitioned program's composition) puts
# independent kernels (subgraphs) on side streams while a CUDA graph is
# captured. EQIFORGE_SIDE_STREAMS=0 turns it off; bench.run sets it off to time
# ours on one stream as well (gpu_one_stream_s).
SIDE_STREAMS = os.environ.get("EQIFORGE_SIDE_STREAMS", "1") != "0"

# The lean path keeps intermediate buffers between calls up to this many bytes
# in all, for up to this many streams.
SCRATCH_LIMIT_BYTES = 256 << 20
SCRATCH_STREAMS = 4


def _nbytes(spec: tuple) -> int:
    shape, stride, dtype = spec
    if any(n == 0 for n in shape):
        return 0
    return (1 + sum((n - 1) * st for n, st in zip(shape, stride))) * torch.empty((), dtype=dtype).element_size()


def _signature(t: torch.Tensor) -> tuple:
    return (tuple(t.shape), tuple(t.stride()), t.dtype, t.device, t.data_ptr() % 16 == 0)


@dataclass
class _Launch:
    run: Callable
    function: Any
    packed_metadata: Any
    compiled: Any
    grid: tuple[int, int, int]
    template: list
    slots: list[tuple[int, int, int]]   # (position in args, 0 input / 1 buffer, index)
    writes: frozenset | None = None     # (0 / 1, index) of the slots it stores through; None: not known


class LeanRunner:
    """Launches the recorded compiled kernels directly (GPU only)."""

    kind = "lean"

    def __init__(self, fallback: ModuleRunner, inputs: list[torch.Tensor]):
        self.fallback = fallback
        if any(is_interpreted(k) for k in kernels_of(fallback.module).values()):
            raise LeanPathUnavailable("the kernels run in Triton's interpreter")
        if not inputs or any(not t.is_cuda for t in inputs):
            raise LeanPathUnavailable("the inputs are not on a GPU")
        import triton
        from triton.runtime import driver

        self._knobs = getattr(triton, "knobs", None)
        self.device = inputs[0].device
        self._get_stream = driver.active.get_current_stream
        self._device_key = driver.active.get_current_device
        outputs, records = record_launches(fallback.module, inputs, fallback.params)
        self.guard = [_signature(t) for t in inputs]
        # Inputs are matched by identity (two inputs may be views of one
        # storage); every other tensor a kernel gets is a buffer forward
        # allocated, matched by storage. Anything else (a view of an input or
        # of a buffer made inside forward) is left to the normal path.
        in_ids = {id(t): i for i, t in enumerate(inputs)}
        self._input_storages = {t.untyped_storage().data_ptr() for t in inputs}
        buffers: dict[int, int] = {}       # storage pointer -> buffer index
        self._buffer_views: dict[int, tuple] = {}
        self.buffer_specs: list[tuple[tuple, tuple, torch.dtype]] = []
        self.launches: list[_Launch] = []
        writes_table = getattr(fallback.module, "WRITES", None)
        for r in records:
            self.launches.append(self._launch_of(r, in_ids, buffers, writes_table))
        self.result: list[tuple[int, int]] = []   # per output: (0 input / 1 buffer, index)
        for t in outputs:
            if id(t) in in_ids:
                self.result.append((0, in_ids[id(t)]))
                continue
            index = self._buffer(t, buffers, "an output")
            self.result.append((1, index))
        self.num_inputs = len(inputs)
        # Intermediate buffers (written and read inside one call, never
        # returned) are allocated once per stream and reused: calls on one
        # stream run in order, so a call's kernels never see another's. That
        # saves an allocation per buffer per call (host time that decode-sized
        # programs are bound by). Outputs are fresh on every call. Above
        # SCRATCH_LIMIT bytes they are allocated per call, as forward does.
        outputs_at = {i for kind, i in self.result if kind == 1}
        self._scratch_specs = [None if i in outputs_at else spec for i, spec in enumerate(self.buffer_specs)]
        scratch_bytes = sum(_nbytes(spec) for spec in self._scratch_specs if spec is not None)
        if scratch_bytes > SCRATCH_LIMIT_BYTES:
            self._scratch_specs = [None] * len(self.buffer_specs)
        self._scratch: dict[int, list] = {}
        # The lean path must give the same bits as the normal one.
        try:
            again = self._lean(inputs)
        except Exception as e:  # noqa: BLE001 -- any failure means: use the normal path
            raise LeanPathUnavailable(f"launching the compiled kernels directly failed: {e}") from e
        expected = fallback(*inputs)
        torch.cuda.synchronize(self.device)
        if len(again) != len(expected) or not all(torch.equal(a, b) for a, b in zip(again, expected)):
            raise LeanPathUnavailable("the direct launch gave other values than Triton's launch path")
        self.plan = self._stream_plan()
        self._side: list[torch.cuda.Stream] = []
        if self.plan is not None:
            self._side = new_side_streams(self.plan, self.device)
            branched = self._lean_branches(inputs)
            torch.cuda.synchronize(self.device)
            if not all(torch.equal(a, b) for a, b in zip(branched, expected)):
                self.plan, self._side = None, []

    def _stream_plan(self) -> StreamPlan | None:
        """The side streams for a captured graph, or None when every launch
        must follow the one before (or a kernel's writes are not known)."""
        if any(ln.writes is None for ln in self.launches):
            return None
        accesses = []
        for ln in self.launches:
            touched = frozenset((kind, index) for _, kind, index in ln.slots)
            accesses.append((touched - ln.writes, ln.writes))
        return side_stream_plan(accesses)

    def _buffer(self, t: torch.Tensor, buffers: dict[int, int], what: str) -> int:
        storage = t.untyped_storage().data_ptr()
        if storage in self._input_storages:
            raise LeanPathUnavailable(f"{what} is a view of an input made inside forward")
        if storage not in buffers:
            if not t.is_contiguous() or t.storage_offset() != 0 or \
                    t.numel() * t.element_size() != t.untyped_storage().nbytes():
                raise LeanPathUnavailable(f"{what} is a partial view of a buffer")
            buffers[storage] = len(self.buffer_specs)
            self.buffer_specs.append((tuple(t.shape), tuple(t.stride()), t.dtype))
            self._buffer_views[buffers[storage]] = _view_key(t)[1:]
        index = buffers[storage]
        if _view_key(t)[1:] != self._buffer_views[index]:
            raise LeanPathUnavailable(f"{what} is another view of a buffer")
        return index

    def _launch_of(self, r: LaunchRecord, in_ids: dict[int, int], buffers: dict[int, int],
                   writes_table: dict | None) -> _Launch:
        compiled = r.compiled
        for attr in ("run", "function", "packed_metadata"):
            if compiled is None or not hasattr(compiled, attr):
                raise LeanPathUnavailable(f"this Triton's compiled kernels have no '{attr}'")
        caches = getattr(r.jit, "device_caches", None)
        if caches is None:
            raise LeanPathUnavailable("this Triton's JIT functions have no device_caches")
        binder = caches[self._device_key()][-1]
        bound_args = binder(*r.args, **r.kwargs)[0]
        template = list(bound_args.values())
        stored = writes_table.get(r.kernel) if writes_table is not None else None
        slots = []
        writes: set | None = None if stored is None else set()
        for pos, (param, a) in enumerate(zip(bound_args.keys(), template)):
            if not isinstance(a, torch.Tensor):
                continue
            if id(a) in in_ids:
                slots.append((pos, 0, in_ids[id(a)]))
            else:
                slots.append((pos, 1, self._buffer(a, buffers, f"an argument of {r.kernel}")))
            if writes is not None and param in stored:
                writes.add(slots[-1][1:])
            template[pos] = None  # do not keep the recorded tensors alive
        if writes is not None and any(kind == 0 for kind, _ in writes):
            writes = None  # a kernel that writes an input: keep program order
        grid = tuple(int(g) for g in r.grid) + (1, 1, 1)
        return _Launch(compiled.run, compiled.function, compiled.packed_metadata, compiled, grid[:3], template, slots,
                       None if writes is None else frozenset(writes))

    def _buffers(self, stream: int) -> list[torch.Tensor]:
        device = self.device
        scratch = self._scratch.get(stream)
        if scratch is None:
            scratch = [None if spec is None else torch.empty_strided(spec[0], spec[1], dtype=spec[2], device=device)
                       for spec in self._scratch_specs]
            if len(self._scratch) < SCRATCH_STREAMS:
                self._scratch[stream] = scratch
        return [t if t is not None else torch.empty_strided(shape, stride, dtype=dtype, device=device)
                for t, (shape, stride, dtype) in zip(scratch, self.buffer_specs)]

    def _hooks(self) -> tuple:
        knobs = self._knobs.runtime if self._knobs is not None else None
        return (knobs.launch_enter_hook, knobs.launch_exit_hook) if knobs is not None else (None, None)

    @staticmethod
    def _run(ln: _Launch, stream: int, inputs, bufs, enter, exit_) -> None:
        args = list(ln.template)
        for pos, kind, index in ln.slots:
            args[pos] = inputs[index] if kind == 0 else bufs[index]
        g0, g1, g2 = ln.grid
        metadata = ln.compiled.launch_metadata(ln.grid, stream, *args) if enter is not None else None
        ln.run(g0, g1, g2, stream, ln.function, ln.packed_metadata, metadata, enter, exit_, *args)

    def _lean(self, inputs) -> tuple:
        stream = self._get_stream(self.device.index)
        bufs = self._buffers(stream)
        enter, exit_ = self._hooks()
        for ln in self.launches:
            self._run(ln, stream, inputs, bufs, enter, exit_)
        return tuple(inputs[i] if kind == 0 else bufs[i] for kind, i in self.result)

    def _lean_branches(self, inputs) -> tuple:
        """The launches on the plan's streams (streams.run_plan)."""
        main = torch.cuda.current_stream(self.device)
        bufs = self._buffers(main.cuda_stream)
        enter, exit_ = self._hooks()

        def launch(i: int, stream) -> None:
            self._run(self.launches[i], stream.cuda_stream, inputs, bufs, enter, exit_)

        run_plan(self.plan, self._side, launch, self.device)
        return tuple(inputs[i] if kind == 0 else bufs[i] for kind, i in self.result)

    def __call__(self, *inputs):
        if len(inputs) != self.num_inputs or any(_signature(t) != g for t, g in zip(inputs, self.guard)):
            return self.fallback(*inputs)
        if self.plan is not None and SIDE_STREAMS and torch.cuda.is_current_stream_capturing():
            return self._lean_branches(inputs)
        return self._lean(inputs)


class GraphRunner:
    """Replays the program as one CUDA graph captured from `inner` (static shapes).

    `bound[i]` marks an input that is the same tensor on every call (a module
    parameter the binding holds): the graph reads it in place. Other inputs
    get a buffer of their own in the graph, into which each call copies them.
    """

    kind = "cuda-graph"

    def __init__(self, inner, inputs: list[torch.Tensor], bound: list[bool] | None = None):
        if not inputs or any(not t.is_cuda for t in inputs):
            raise RuntimeError("CUDA graphs need the inputs on a GPU")
        self.inner = inner
        bound = bound or [False] * len(inputs)
        self.static_inputs = [t if keep else t.clone() for t, keep in zip(inputs, bound)]
        self.shapes = [(tuple(t.shape), t.dtype, t.device) for t in inputs]
        stream = torch.cuda.Stream(device=inputs[0].device)
        stream.wait_stream(torch.cuda.current_stream(inputs[0].device))
        with torch.cuda.stream(stream):
            for _ in range(2):  # compile and warm up outside the capture
                inner(*self.static_inputs)
        torch.cuda.current_stream(inputs[0].device).wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_outputs = tuple(inner(*self.static_inputs))

    def __call__(self, *inputs):
        for t, s, spec in zip(inputs, self.static_inputs, self.shapes):
            if (tuple(t.shape), t.dtype, t.device) != spec:
                raise BindingError(f"CUDA graph replay: input {tuple(t.shape)} {t.dtype} does not match the "
                                   f"captured {spec[0]} {spec[1]}")
            if t.data_ptr() != s.data_ptr():
                s.copy_(t)
        self.graph.replay()
        return self.static_outputs


def _module_level(runner) -> list:
    """The runners that stand for one module each under a runner: a graph
    runner's inner one's, and those of a nested composition's steps; a lean
    or module runner is its own."""
    if getattr(runner, "steps", None) is not None:
        return [r for step in runner.steps for r in _module_level(step.piece.runner)]
    if getattr(runner, "inner", None) is not None:
        return _module_level(runner.inner)
    return [runner]


def _module_plans(runner) -> list[StreamPlan]:
    """The stream plans of the modules under a runner (lean runners')."""
    return [r.plan for r in _module_level(runner) if isinstance(getattr(r, "plan", None), StreamPlan)]


def side_stream_note(runners: list, steps_plan: StreamPlan | None = None) -> str | None:
    """The report's line on what runs on side streams in a captured graph:
    kernels of one module (`runners`' plans), and subgraphs (`steps_plan`, a
    composition's); None when everything follows what came before."""
    plans = [p for r in runners for p in _module_plans(r)]
    parts = []
    if plans:
        kernels = sum(len(p.stream) for p in plans)
        side = sum(1 for p in plans for s in p.stream if s)
        where = "its module" if len(plans) == 1 else f"{len(plans)} modules"
        parts.append(f"{side} of the {kernels} kernels of {where}")
    if steps_plan is not None:
        side = sum(1 for s in steps_plan.stream if s)
        parts.append(f"{side} of the {len(steps_plan.stream)} subgraphs")
    if not parts:
        return None
    return (f"side streams: in a captured CUDA graph, {' and '.join(parts)} run beside what they do not "
            f"depend on")


def fused_launch_note(runners: list) -> str | None:
    """The report's line on kernels that share launches: the members of the
    modules' fused kernels, where the tuned parameters did not choose
    separate launches; None when there are none."""
    kernels = launches = 0
    for r in (r for top in runners for r in _module_level(top)):
        m = getattr(r, "fallback", r)  # a lean runner's module runner
        if not isinstance(m, ModuleRunner):
            continue
        fused = getattr(m.module, "FUSED", {})
        if fused and not m.params.get("separate_launches"):
            kernels += sum(len(members) for members in fused.values())
            launches += len(fused)
    if not kernels:
        return None
    return f"fused launches: {kernels} independent kernels run side by side in {launches} launches"


def make_runner(module: types.ModuleType, params: dict, inputs: list[torch.Tensor], *, lean: bool = True,
                cuda_graphs: bool = False, bound: list[bool] | None = None) -> tuple[Any, list[str]]:
    """The fastest runner that works for this module on these inputs, and notes
    on why a faster one was not used."""
    notes: list[str] = []
    runner: Any = ModuleRunner(module, params)
    if lean:
        try:
            runner = LeanRunner(runner, inputs)
        except LeanPathUnavailable as e:
            notes.append(f"lean launch path not used: {e}")
    if cuda_graphs:
        try:
            runner = GraphRunner(runner, inputs, bound)
        except Exception as e:  # noqa: BLE001 -- report and keep the launch path
            notes.append(f"CUDA graph not used: {e}")
    return runner, notes
