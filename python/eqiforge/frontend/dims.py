"""Naming dims by unification (DESIGN §2.1).

Every tensor position the translator sees gets a dim *variable*. Operators
that align positions (broadcasting, matmul's contraction, batch dims) unify
variables; at the end each class of unified variables becomes one IR dim name.

The one constraint: a tensor's dims have distinct names. Each tensor's dims
form a *group*, and two variables that share a group may never be unified. The
translator asks ``try_unify`` and, where it fails, renames instead -- this is
how self-attention's ``q @ k.T`` gets keys on ``t`` rather than a batch product
over ``s``. Renames and splits add their (source, target) pairs as groups too,
so a later unification cannot turn ``(rename s t X)`` into a rename to itself.

Unification is global and retroactive: expressions keep variables and are
printed with the final names, so a unification late in the graph renames the
dim everywhere it appears, which is exactly what positional semantics says.

Names: each variable may carry hints ``(priority, name)``; a class takes its
best hint (lowest priority, then the earliest given) and a numeric suffix where
that name is taken. Classes are named in the order they were created, so the
result is deterministic.
"""

from __future__ import annotations

# Hint priorities, best first. Attention semantics beat head splits beat
# contraction roles beat generic positional guesses.
PRIO_ATTENTION = 0
PRIO_SPLIT = 1
PRIO_SELF_ATTENTION = 2
PRIO_CONTRACTION = 3
PRIO_REDUCTION = 4
PRIO_ROWS_COLS = 5
PRIO_BATCH = 6
PRIO_INDEX = 7
PRIO_DEFAULT = 9


class DimSolver:
    """Union-find over dim variables (plain ints) with extents, groups of
    variables that must stay distinct, and naming hints."""

    def __init__(self) -> None:
        self._parent: list[int] = []
        self._extent: list[int] = []
        self._hints: list[list[tuple[int, int, str]]] = []  # per root: (prio, order, name)
        self._groups: list[set[int]] = []  # per root: ids of the groups it belongs to
        self._num_groups = 0
        self._hint_order = 0

    # ---- variables -----------------------------------------------------------

    def fresh(self, extent: int, hint: str | None = None, prio: int = PRIO_DEFAULT) -> int:
        v = len(self._parent)
        self._parent.append(v)
        self._extent.append(int(extent))
        self._hints.append([])
        self._groups.append(set())
        if hint:
            self.hint(v, hint, prio)
        return v

    def find(self, v: int) -> int:
        root = v
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[v] != root:  # path compression
            self._parent[v], v = root, self._parent[v]
        return root

    def same(self, a: int, b: int) -> bool:
        return self.find(a) == self.find(b)

    def extent(self, v: int) -> int:
        return self._extent[self.find(v)]

    def hint(self, v: int, name: str, prio: int) -> None:
        self._hint_order += 1
        self._hints[self.find(v)].append((prio, self._hint_order, name))

    def best_hint(self, v: int) -> tuple[int, str] | None:
        hints = self._hints[self.find(v)]
        if not hints:
            return None
        prio, _, name = min(hints)
        return prio, name

    # ---- distinctness --------------------------------------------------------

    def add_group(self, vars_) -> None:
        """The variables name dims of one tensor (or a rename's two sides):
        they must keep distinct names. Callers guarantee they are distinct now."""
        gid = self._num_groups
        self._num_groups += 1
        for v in vars_:
            if v is not None:
                self._groups[self.find(v)].add(gid)

    def can_unify(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        return self._extent[ra] == self._extent[rb] and not (self._groups[ra] & self._groups[rb])

    def try_unify(self, a: int, b: int) -> bool:
        """Unifies a and b unless that would give one tensor two equal dims
        (or the extents differ). Returns whether they are now one class."""
        if not self.can_unify(a, b):
            return False
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        root, child = (ra, rb) if ra < rb else (rb, ra)  # the older class stays root
        self._parent[child] = root
        self._groups[root] |= self._groups[child]
        self._hints[root].extend(self._hints[child])
        self._groups[child] = set()
        self._hints[child] = []
        return True

    # ---- naming --------------------------------------------------------------

    def names(self, used_vars, taken: set[str]) -> dict[int, str]:
        """A name for the class of every variable in used_vars: {root: name}.
        Names in `taken` (value names, reserved words) are avoided."""
        roots = sorted({self.find(v) for v in used_vars})
        taken = set(taken)
        out: dict[int, str] = {}
        for r in roots:
            best = self.best_hint(r)
            base = best[1] if best else "d"
            name, i = base, 1
            while name in taken:
                name = f"{base}{i}"
                i += 1
            taken.add(name)
            out[r] = name
        return out
