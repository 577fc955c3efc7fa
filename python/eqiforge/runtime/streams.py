"""Which of a module's kernel launches may run side by side, and on which stream.

A generated module launches its kernels one after another. Two launches must
keep their order when one writes a buffer the other reads or writes (the
module's ``WRITES`` table names the pointers each kernel stores through; every
other tensor argument is read); the others are independent, and in a captured
CUDA graph they can overlap, so the fixed cost of small kernels (launch, ramp,
tail: ~5 µs each on an H100) is paid once per branch instead of once per
kernel. mHC's connection computes its three projections in three kernels that
read the same inputs and nothing the others write.

``plan_streams`` turns the launches' reads and writes into a static plan: a
stream per launch (stream 0 is the caller's), the launches each must wait for
on other streams, and the streams to join at the end. Launches keep program
order within a stream, so a launch waits only for the latest launch it
depends on of each other stream, and not even for that when an earlier wait
of its stream already covered it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

# Side streams a plan may use besides the caller's: more buy little, since the
# branches of a decode layer's kernels are few and each stream costs a fork.
MAX_STREAMS = 4


@dataclass
class StreamPlan:
    stream: list[int]                      # per launch: 0 the caller's stream, 1.. side streams
    waits: list[list[int]]                 # per launch: earlier launches (other streams) to wait for first
    record: list[bool]                     # per launch: record an event after it (someone waits for it)
    forks: list[bool] = field(default_factory=list)  # per launch: its side stream starts there
    joins: list[int] = field(default_factory=list)   # the last launch of each side stream, joined at the end

    @property
    def streams(self) -> int:
        return 1 + max(self.stream, default=0)


def dependencies(accesses: Sequence[tuple[frozenset, frozenset]]) -> list[set[int]]:
    """Per launch, the earlier launches it must follow: those that wrote what
    it reads or writes, and those that read what it writes since the last
    write. `accesses[i]` is (read keys, written keys) of launch i."""
    last_writer: dict[Hashable, int] = {}
    readers: dict[Hashable, list[int]] = {}
    deps: list[set[int]] = []
    for i, (reads, writes) in enumerate(accesses):
        d: set[int] = set()
        for key in reads | writes:
            if key in last_writer:
                d.add(last_writer[key])
        for key in writes:
            d.update(readers.get(key, ()))
        d.discard(i)
        deps.append(d)
        for key in reads - writes:
            readers.setdefault(key, []).append(i)
        for key in writes:
            last_writer[key] = i
            readers[key] = []
    return deps


def plan_streams(accesses: Sequence[tuple[frozenset, frozenset]], max_streams: int = MAX_STREAMS) -> StreamPlan:
    """Streams for launches with the given (reads, writes): each launch goes
    on the stream of its latest dependency when that stream ends there (the
    chain goes on without a wait), else on a stream not used yet, else on the
    stream idle the longest."""
    deps = dependencies(accesses)
    n = len(deps)
    stream = [0] * n
    waits: list[list[int]] = [[] for _ in range(n)]
    record = [False] * n
    forks = [False] * n
    tail: list[int] = []                    # per stream: its last launch
    covered: list[list[int]] = []           # covered[s][t]: the latest launch of t that s has waited for
    covered_at: list[list[int]] = []        # per launch: its stream's covered row right after it
    for i in range(n):
        chains = [s for s, last in enumerate(tail) if last in deps[i]]
        if chains:
            s = max(chains, key=lambda s: tail[s])
        elif len(tail) < max_streams:
            s = len(tail)
            tail.append(-1)
            covered.append([-1] * max_streams)
            forks[i] = s > 0
        else:
            s = min(range(len(tail)), key=lambda s: tail[s])
        stream[i] = s
        latest: dict[int, int] = {}
        for j in deps[i]:
            t = stream[j]
            if t != s and j > latest.get(t, -1):
                latest[t] = j
        for t, j in sorted(latest.items()):
            if covered[s][t] >= j:
                continue
            waits[i].append(j)
            record[j] = True
            covered[s][t] = j
            for u, k in enumerate(covered_at[j]):   # and what j's stream had waited for before j
                covered[s][u] = max(covered[s][u], k)
        tail[s] = i
        covered[s][s] = i
        covered_at.append(list(covered[s]))
    joins = [tail[s] for s in range(1, len(tail)) if tail[s] >= 0]
    for j in joins:
        record[j] = True
    return StreamPlan(stream, waits, record, forks, joins)


def side_stream_plan(accesses: Sequence[tuple[frozenset, frozenset]]) -> StreamPlan | None:
    """plan_streams' plan, or None when it keeps every launch on the caller's
    stream (nothing to overlap)."""
    plan = plan_streams(accesses)
    return plan if plan.streams > 1 else None


def new_side_streams(plan: StreamPlan, device) -> list:
    """The plan's side streams (torch.cuda.Stream) on `device`. Make them
    outside a capture: making a stream during one is not allowed."""
    import torch

    return [torch.cuda.Stream(device=device) for _ in range(plan.streams - 1)]


def run_plan(plan: StreamPlan, side: list, launch: Callable[[int, Any], None], device) -> None:
    """Runs launch(i, stream) for every launch of the plan in order, each on
    its stream: a side stream forks from the caller's at its first launch,
    waits for the events of the launches it depends on, and is joined back at
    the end. `side` holds the plan's side streams (torch.cuda.Stream)."""
    import torch

    main = torch.cuda.current_stream(device)
    streams = [main] + list(side)
    start = torch.cuda.Event()
    start.record(main)
    events: dict[int, Any] = {}
    for i, s in enumerate(plan.stream):
        stream = streams[s]
        if plan.forks[i]:
            stream.wait_event(start)
        for j in plan.waits[i]:
            stream.wait_event(events[j])
        launch(i, stream)
        if plan.record[i]:
            events[i] = torch.cuda.Event()
            events[i].record(stream)
    for j in plan.joins:
        main.wait_event(events[j])
