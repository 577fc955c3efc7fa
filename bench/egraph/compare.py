#!/usr/bin/env python3
"""The e-graph engine against egg and egglog, on the same workloads, in one run.

Workloads (issue 3):
  ac N      associativity + commutativity of add over a sum of N distinct
            leaves (left-nested), saturated: 2^N - 1 e-classes and
            3^N - 2^(N+1) + 1 add e-nodes (plus N leaves).
  arith K   K iterations of a small algebraic rule set (ac of add and mul,
            distributivity both ways, units, sub/neg/div laws) on a
            realistic term: LayerNorm over four scalars (layernorm4.eqf).

Engines:
  eqiforge  `eqiforge-opt bench-egraph` / `eqiforge-opt saturate` (our CLI),
            with its backoff scheduler (the default) and with --scheduler simple
  egg       the `snake-egg` package (egg 0.9 through Python; its Runner uses
            egg's BackoffScheduler and exposes no e-graph sizes)
  egglog    the `egglog` package (its Rust bindings, fed egglog text)

Each case runs in its own child process. Reported per case: the engine's own
time for the saturation (construction and process start excluded), the child's
CPU time (user + sys, everything included), its peak resident memory
(ru_maxrss from wait4), the sizes where the engine tells them, and how it
stopped. A case whose CPU time passes --timeout is stopped and shown as such
(CPU, not wall, time: on a shared machine the wall time of every engine
stretches with the load).

Usage:
  pip install snake-egg egglog
  python bench/egraph/compare.py --opt build/eqiforge-opt [--ac 10 11 12 13] [--arith 5 6 7]
         [--engines eqiforge egg egglog] [--schedulers backoff simple]
         [--timeout 120] [--out bench/results/egraph-DATE.md]
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TERM_FILE = os.path.join(HERE, "layernorm4.eqf")

# ---- the workloads for egg and egglog, as children of this script ----------------------

ARITH_RULES = [  # name, lhs, rhs, bidirectional: the "arith" set of src/egraph/schedule.cc
    ("comm-add", "(add a b)", "(add b a)", False),
    ("assoc-add", "(add a (add b c))", "(add (add a b) c)", False),
    ("comm-mul", "(mul a b)", "(mul b a)", False),
    ("assoc-mul", "(mul a (mul b c))", "(mul (mul a b) c)", False),
    ("distribute", "(mul a (add b c))", "(add (mul a b) (mul a c))", True),
    ("add-zero", "(add a 0)", "a", False),
    ("mul-one", "(mul a 1)", "a", False),
    ("sub-to-neg", "(sub a b)", "(add a (neg b))", False),
    ("neg-neg", "(neg (neg a))", "a", False),
    ("neg-mul", "(neg (mul a b))", "(mul (neg a) b)", False),
    ("div-mul", "(div (mul a b) c)", "(mul a (div b c))", True),
]
AC_RULES = ARITH_RULES[:4]


def sexpr(text):
    """A tiny reader for the rule texts above: nested lists of atoms."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def read():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok != "(":
            return tok
        out = []
        while tokens[pos] != ")":
            out.append(read())
        pos += 1
        return out

    return read()


def layernorm_term():
    """The term of layernorm4.eqf as nested lists (lets inlined)."""
    def add(a, b): return ["add", a, b]
    def mul(a, b): return ["mul", a, b]
    def sub(a, b): return ["sub", a, b]
    xs = ["x0", "x1", "x2", "x3"]
    mean = mul(add(add(add(xs[0], xs[1]), xs[2]), xs[3]), "0.25")
    d = [sub(x, mean) for x in xs]
    var = mul(add(add(add(mul(d[0], d[0]), mul(d[1], d[1])), mul(d[2], d[2])), mul(d[3], d[3])), "0.25")
    return add(mul(mul(d[0], ["rsqrt", add(var, "eps")]), "g"), "b")


def ac_term(n):
    term = "x0"
    for i in range(1, n):
        term = ["add", term, f"x{i}"]
    return term


def is_number(atom):
    try:
        float(atom)
        return True
    except ValueError:
        return False


def child_egg(kind, size, time_limit):
    from collections import namedtuple

    from snake_egg import EGraph, Rewrite, Var

    ops = {name: namedtuple(name.capitalize(), ["x", "y"][:arity])
           for name, arity in [("add", 2), ("mul", 2), ("sub", 2), ("div", 2), ("neg", 1), ("rsqrt", 1)]}
    variables = {}

    def build(e, in_pattern):
        if isinstance(e, list):
            return ops[e[0]](*[build(c, in_pattern) for c in e[1:]])
        if is_number(e):
            return float(e)
        if in_pattern:
            return variables.setdefault(e, Var(e))
        return e

    rules = []
    for name, lhs, rhs, both in (AC_RULES if kind == "ac" else ARITH_RULES):
        l, r = build(sexpr(lhs), True), build(sexpr(rhs), True)
        rules.append(Rewrite(l, r, name=name))
        if both:
            rules.append(Rewrite(r, l, name=name + "-rev"))
    term = build(ac_term(size) if kind == "ac" else layernorm_term(), False)
    g = EGraph()
    g.add(term)
    iters = 1_000_000 if kind == "ac" else size
    t0 = time.perf_counter()
    g.run(rules, iter_limit=iters, time_limit=time_limit, node_limit=2_000_000_000)
    seconds = time.perf_counter() - t0
    out = {"seconds": seconds}
    if kind == "ac":
        # Saturated AC knows every order of the sum: the reversed sum is equal.
        rev = build(ac_term(size), False)
        rev_term = f"x{size - 1}"
        for i in range(size - 2, -1, -1):
            rev_term = ops["add"](rev_term, f"x{i}")
        out["stop"] = "saturated" if g.equiv(rev, rev_term) and seconds < time_limit else "not saturated"
    else:
        out["stop"] = "time-limit" if seconds >= time_limit else f"{size} iterations"
    return out


def child_egglog(kind, size, time_limit):
    from egglog.bindings import EGraph

    def text(e, in_pattern):
        if isinstance(e, list):
            return "(" + e[0].capitalize() + " " + " ".join(text(c, in_pattern) for c in e[1:]) + ")"
        if is_number(e):
            return f"(Num {float(e)!r})"
        return e if in_pattern else f'(V "{e}")'

    lines = ["(datatype Math (Add Math Math) (Mul Math Math) (Sub Math Math) (Div Math Math)"
             " (Neg Math) (Rsqrt Math) (V String) (Num f64))"]
    for name, lhs, rhs, both in (AC_RULES if kind == "ac" else ARITH_RULES):
        verb = "birewrite" if both else "rewrite"
        lines.append(f"({verb} {text(sexpr(lhs), True)} {text(sexpr(rhs), True)})")
    lines.append(f"(let $t {text(ac_term(size) if kind == 'ac' else layernorm_term(), False)})")
    g = EGraph()
    g.run_program(*g.parse_program("\n".join(lines)))
    run = "(run-schedule (saturate (run)))" if kind == "ac" else f"(run {size})"
    t0 = time.perf_counter()
    g.run_program(*g.parse_program(run))
    seconds = time.perf_counter() - t0
    sizes = g.run_program(*g.parse_program("(print-size)"))
    enodes = None
    for item in sizes:
        pairs = getattr(item, "sizes", None) or getattr(item, "_0", None)
        if pairs is None and hasattr(item, "__iter__"):
            pairs = list(item)
        if pairs:
            try:
                enodes = sum(int(count) for _, count in pairs)
            except (TypeError, ValueError):
                pass
    if enodes is None:  # fall back on the printed form: PrintAllFunctionsSize([('Add', 50), ...])
        import re
        enodes = sum(int(c) for c in re.findall(r"', (\d+)\)", str(sizes))) or None
    out = {"seconds": seconds, "enodes": enodes}
    out["stop"] = "saturated" if kind == "ac" else f"{size} iterations"
    return out


# ---- running children ------------------------------------------------------------------------


def cpu_seconds(pid):
    """CPU time (user + sys) of a running process, from /proc (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def run_child(cmd, cpu_limit):
    """Runs cmd; returns (exit status or None when stopped, stdout, cpu seconds, peak MiB).

    The limit is on the child's CPU time, not wall time, so that a loaded
    machine (other processes on the same cores) slows every engine alike
    without cutting any of them short; wall time has a generous backstop."""
    with tempfile.TemporaryFile(mode="w+") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
        start = time.perf_counter()
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid != 0:
                break
            if cpu_seconds(p.pid) > cpu_limit or time.perf_counter() - start > 30 * cpu_limit + 60:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                status = None
                break
            time.sleep(0.01)
        p.returncode = 0  # reaped here; keep Popen from waiting again
        out.seek(0)
        text = out.read()
    code = None if status is None else os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return code, text, cpu, usage.ru_maxrss / 1024.0


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def case(engine, kind, size, args, scheduler=None):
    # The engines' own (wall-clock) time limits are set out of reach: the
    # CPU-time limit of run_child decides.
    timeout = args.timeout
    if engine == "eqiforge":
        limits = ["--time-limit", "1000000", "--scheduler", scheduler]
        if kind == "ac":
            cmd = [args.opt, "bench-egraph", "--ac", str(size), "--json"] + limits
        else:
            cmd = [args.opt, "saturate", TERM_FILE, "--rules", "arith", "--iter-limit", str(size),
                   "--node-limit", "200000000", "--json"] + limits
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, kind, str(size), "1000000"]
    code, text, cpu, mib = run_child(cmd, timeout)
    row = {"engine": engine + (f" ({scheduler})" if scheduler else ""), "workload": f"{kind} {size}",
           "cpu": cpu, "peak_mib": mib}
    result = last_json(text) if code == 0 else None
    if code is None:
        row["stop"] = f"stopped at {timeout:g} cpu s"
    elif result is None:
        row["stop"] = "failed: " + text.strip().splitlines()[-1][:80] if text.strip() else f"failed ({code})"
    else:
        row["seconds"] = result.get("seconds")
        row["enodes"] = result.get("enodes")
        row["eclasses"] = result.get("eclasses")
        row["stop"] = result.get("stop")
        if kind == "arith" and engine == "eqiforge":
            row["stop"] = f"{result.get('iterations')} iterations" if result.get("stop") == "iteration-limit" \
                else result.get("stop")
    return row


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def table(rows):
    out = ["| workload | engine | seconds | cpu s | peak MiB | e-nodes | e-classes | stop |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['workload']} | {r['engine']} | {fmt(r.get('seconds'))} | {fmt(r['cpu'], 2)} | "
                   f"{fmt(r['peak_mib'], 1)} | {fmt(r.get('enodes'))} | {fmt(r.get('eclasses'))} | {r.get('stop')} |")
    return "\n".join(out)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        engine, kind, size, limit = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
        fn = child_egg if engine == "egg" else child_egglog
        print(json.dumps(fn(kind, size, limit)))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opt", required=True, help="path to eqiforge-opt")
    ap.add_argument("--ac", type=int, nargs="*", default=[10, 11, 12, 13])
    ap.add_argument("--arith", type=int, nargs="*", default=[5, 6, 7])
    ap.add_argument("--engines", nargs="*", default=["eqiforge", "egg", "egglog"])
    ap.add_argument("--timeout", type=float, default=120, help="CPU seconds per case before it is stopped")
    ap.add_argument("--schedulers", nargs="*", default=["backoff", "simple"],
                    help="eqiforge's schedulers to run (egg always uses backoff, egglog runs every match)")
    ap.add_argument("--out", help="also write the markdown report here")
    args = ap.parse_args()

    rows = []
    for kind, sizes in (("ac", args.ac), ("arith", args.arith)):
        for size in sizes:
            for engine in args.engines:
                schedulers = args.schedulers if engine == "eqiforge" else [None]
                for s in schedulers:
                    row = case(engine, kind, size, args, s)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)

    load = os.getloadavg()
    header = [
        f"# e-graph engine vs egg and egglog — {datetime.date.today().isoformat()}",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores ({platform.processor() or 'cpu'}), no GPU;"
        f" load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}",
        f"- python {platform.python_version()}; egg via snake-egg, egglog via the egglog package",
        f"- command: `{' '.join([os.path.basename(sys.executable)] + sys.argv)}`",
        "- seconds: the engine's own saturation time; cpu s: the child process's user+sys time"
        " (start-up and construction included); peak MiB: the child's max resident set",
        "",
        "",
    ]
    report = "\n".join(header) + table(rows) + "\n"
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
