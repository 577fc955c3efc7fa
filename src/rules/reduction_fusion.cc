// Reduction fusion (DESIGN §2.5): reductions over one axis that can share a
// pass become one preduce of a tuple.
//
// Dependent fusion is data: a RepairTemplate names the producer reduction a
// consumer reads through its finished value, the consumer's shape, the local
// form that reads the block's own state instead, and the tuple reduction whose
// repair component fixes the consumer's state up when blocks combine. Each
// template and each consumer context it lists becomes one pattern rule; a new
// repair (log-sum-exp's, a sink's) is a new table row, not new code.
//
// Independent fusion pairs e-classes that no single pattern matches: it is a
// computed rule on one preduce that looks its partners up in the e-graph
// (preduce nodes over the same axis whose bodies have the same other axes,
// so they live in one kernel), bounded by max_fused_arity.
#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <set>

#include "eqiforge/ir/diagnostic.h"
#include "extract/flat_set.h"
#include "rules/rule_table.h"

namespace eqf::rules {
namespace {

// ---- dependent fusion: the repair templates ----------------------------------------------

struct RepairTemplate {
  const char* name;
  // The consumer's factor: how it reads the producer's finished value
  // (replicated onto the loop axis ?p).
  const char* factor;
  // The same factor computed against the block's local state.
  const char* local_factor;
  // Shapes of consumers in which the repair is exact, with $F for the
  // factor, each with a name suffix.
  std::vector<std::pair<const char*, const char*>> contexts;
  // The state components before the consumer's, and the tuple reduction.
  std::vector<const char*> state;
  const char* reduction;
  const char* conditions;
  // The producer's finished value, when it alone binds the whole state: it
  // equals the state's component `producer_index` (so the fused pass also
  // yields it).
  const char* producer = nullptr;
  int producer_index = 0;
};

const std::vector<RepairTemplate>& repair_templates() {
  static const std::vector<RepairTemplate> table = {
      // Softmax's normalizer and attention's P.V against the final max M =
      // max_i m_i: sum_x exp(x - M) = sum_i exp(m_i - M) sum_{x in i} exp(x - m_i).
      // Exact for ANY local m_i (the block's own max keeps it stable), and
      // linear contexts only (a sum, a contraction with another operand).
      {"exp-scaling",
       "(exp (sub ?s (replicate ?p (preduce ?p max ?m))))",
       "(exp (sub ?s ?m))",
       {{"sum", "(sum ?d $F)"},
        {"tile-matmul-left", "(tile_matmul ?k $F ?w)"},
        {"tile-matmul-right", "(tile_matmul ?k ?w $F)"}},
       {"?m"},
       "(max (exp-sum 0))",
       ""},
      // Variance around the final mean: each block keeps (count, mean, M2)
      // around its own mean; Chan's merge shifts M2 to the combined mean.
      // The blocks must cover the whole dim once (one level, n = extent).
      {"mean-shift",
       "(sub ?x (replicate ?p (div (preduce ?p + (sum ?d ?x)) ?n)))",
       "(sub ?x (div (sum ?d ?x) (sum ?d (add (mul ?x 0) 1))))",
       {{"m2", "(sum ?d (mul $F $F))"}},
       {"(sum ?d (add (mul ?x 0) 1))", "(div (sum ?d ?x) (sum ?d (add (mul ?x 0) 1)))"},
       "(+ (welford-mean 0) (welford-m2 0 1))",
       "(extent ?n ?d) (sole-split ?x ?d ?p)",
       "(div (preduce ?p + (sum ?d ?x)) ?n)",
       1},
  };
  return table;
}

std::string substitute(std::string text, const std::string& hole, const std::string& with) {
  for (size_t at = text.find(hole); at != std::string::npos; at = text.find(hole, at + with.size()))
    text.replace(at, hole.size(), with);
  return text;
}

void repair_rules(Table& t) {
  for (const RepairTemplate& r : repair_templates()) {
    std::string state;
    for (const char* s : r.state) state += std::string(s) + " ";
    const std::string index = std::to_string(r.state.size());
    for (const auto& [suffix, context] : r.contexts) {
      std::string lhs = "(preduce ?p + " + substitute(context, "$F", r.factor) + ")";
      std::string local = substitute(context, "$F", r.local_factor);
      std::string rhs = "(proj " + index + " (preduce ?p " + r.reduction + " (tuple " + state + local + ")))";
      t.rule(std::string("repair-") + r.name + "-" + suffix, lhs, rhs, r.conditions);
    }
    if (r.producer) {
      // The whole state, with the first consumer context as its last component.
      std::string local = substitute(r.contexts.front().second, "$F", r.local_factor);
      std::string rhs = "(proj " + std::to_string(r.producer_index) + " (preduce ?p " + r.reduction +
                        " (tuple " + state + local + ")))";
      t.rule(std::string("repair-") + r.name + "-producer", r.producer, rhs, r.conditions);
    }
  }
}

// ---- independent fusion ----------------------------------------------------------------------

// What fusion knows about one e-graph. Rebuilt each runner iteration (the
// clock ticks once per iteration): the live preduce e-nodes grouped by
// (axis, scope). Kept across iterations: each body's region (the classes
// with the loop axis in scope below it) and the finished values it reads,
// and the pairs already fused. A stale region can only make a pair fuse that
// need not, or not fuse one that could; fusing is correct either way
// (preduce of a tuple is the tuple of the preduces).
struct Region {
  std::vector<EClassId> classes;  // sorted
  std::vector<EClassId> reads;    // sorted: the finished values the body cannot do without
  bool settled = false;           // reads computed (else unsettled: it reads nothing known)
};

// What fusion keeps across the iterations of one e-graph.
struct FusionMemo {
  // Pairs already fused (root class, body class, partner e-node): a pair
  // fuses to the same nodes every time.
  extract::StampedSet done;
  // Regions by (axis << 32 | body class): indices into a deque, whose
  // references stay valid as it grows.
  extract::IndexMap region_index;
  std::deque<Region> regions;
};

struct FusionIndex {
  const EGraph* g = nullptr;
  uint32_t clock = 0;
  FusionMemo memo;
  std::map<std::pair<uint32_t, std::vector<uint32_t>>, std::vector<ENodeId>> groups;
  std::vector<int> slot;                         // region_of's scratch: class id -> its index, or -1
};

// The axes other than p of a body (all components must agree): where it can
// run. Empty optional when the components disagree.
std::optional<std::vector<uint32_t>> scope_of(const Type& body, Axis p) {
  std::optional<std::vector<uint32_t>> scope;
  for (const TensorType& t : body.parts) {
    std::vector<uint32_t> axes;
    for (const AxisState& a : t.delta)
      if (a.axis != p) axes.push_back(a.axis.pack());
    if (scope && *scope != axes) return std::nullopt;
    scope = std::move(axes);
  }
  return scope;
}

FusionIndex& index_for(FusionIndex& index, const EGraph& g) {
  if (index.g != &g || index.clock != g.clock()) {
    const bool same = index.g == &g && index.clock < g.clock();
    FusionMemo memo = same ? std::move(index.memo) : FusionMemo{};
    index = FusionIndex{};
    index.memo = std::move(memo);
    index.g = &g;
    index.clock = g.clock();
    for (uint32_t i = 0; i < g.node_capacity(); ++i) {
      ENodeId n(i);
      if (!g.live(n) || g.op(n) != Op::PReduce) continue;
      Axis p = attr_axis(g.attrs(n), 0);
      std::optional<std::vector<uint32_t>> scope = scope_of(g.type(g.children(n)[0]).get(), p);
      if (scope) index.groups[{p.pack(), *scope}].push_back(n);
    }
  }
  return index;
}

// A body's region and the finished values it must read: a class reads what
// every one of its e-nodes reads (any of them computes it), an e-node what
// its children read, and a replicate or partition onto p reads its operand.
// A greatest fixpoint over the region (cycles start from "reads everything").
const Region& region_of(FusionIndex& index, const EGraph& g, Axis p, EClassId body) {
  body = g.find(body);
  const uint64_t key = uint64_t(p.pack()) << 32 | body.v;
  FusionMemo& memo = index.memo;
  if (uint32_t at = memo.region_index.find(key); at != extract::IndexMap::kAbsent) return memo.regions[at];
  auto keep = [&](Region&& r) -> const Region& {
    memo.region_index.insert(key, uint32_t(memo.regions.size()));
    return memo.regions.emplace_back(std::move(r));
  };
  // A class whose one e-node is a tuple (what fusing makes: most bodies
  // met after the first fusions) reads what its components read, and its
  // region is theirs: the union of their regions, each cached, instead of
  // a fixpoint over all of it again. The same sets as the fixpoint, but
  // for the bounds (each component's region has its own kMaxRegion and
  // budget).
  if (auto nodes = g.nodes(body); nodes.size() == 1 && g.op(nodes[0]) == Op::Tuple) {
    Region r;
    r.classes.push_back(body);
    r.settled = true;
    for (EClassId k : g.children(nodes[0])) {
      k = g.find(k);
      bool has_p = false;  // a component without p in scope is outside the region
      for (const TensorType& t : g.type(k).get().parts) has_p |= t.state(p) != nullptr;
      if (!has_p || k == body) continue;
      const Region& part = region_of(index, g, p, k);  // references into the deque stay valid
      r.classes.insert(r.classes.end(), part.classes.begin(), part.classes.end());
      r.reads.insert(r.reads.end(), part.reads.begin(), part.reads.end());
      r.settled &= part.settled;
    }
    std::sort(r.classes.begin(), r.classes.end());
    r.classes.erase(std::unique(r.classes.begin(), r.classes.end()), r.classes.end());
    if (r.settled) {
      std::sort(r.reads.begin(), r.reads.end());
      r.reads.erase(std::unique(r.reads.begin(), r.reads.end()), r.reads.end());
    } else {
      r.reads.clear();
    }
    return keep(std::move(r));
  }
  Region r;
  std::vector<EClassId> stack = {body};
  // Class id -> its index in r.classes (0 while on the stack); -1 outside.
  // Class ids are e-node ids (each new e-node makes its class).
  std::vector<int>& slot = index.slot;
  if (slot.size() < g.node_capacity()) slot.resize(g.node_capacity(), -1);
  slot[body.v] = 0;
  constexpr size_t kMaxRegion = 4096;
  while (!stack.empty() && r.classes.size() < kMaxRegion) {
    EClassId c = stack.back();
    stack.pop_back();
    r.classes.push_back(c);
    for (ENodeId n : g.nodes(c)) {
      Op op = g.op(n);
      if ((op == Op::Replicate || op == Op::Partition) && attr_axis(g.attrs(n), 0) == p) continue;
      for (EClassId k : g.children(n)) {
        k = g.find(k);
        if (slot[k.v] >= 0) continue;
        bool has_p = false;  // stay where p is in scope
        for (const TensorType& t : g.type(k).get().parts) has_p |= t.state(p) != nullptr;
        if (!has_p) continue;
        slot[k.v] = 0;
        stack.push_back(k);
      }
    }
  }
  const size_t m = r.classes.size();
  for (size_t i = 0; i < m; ++i) slot[r.classes[i].v] = int(i);
  // The region's e-nodes as the fixpoint reads them, once: a replicate or
  // partition onto p reads its operand; any other e-node what its children
  // inside the region read (their slots in `kids`).
  struct NodeReads {
    bool view;
    EClassId operand;
    uint32_t first, count;
  };
  std::vector<NodeReads> nodes;
  std::vector<uint32_t> first_node(m + 1);
  std::vector<int> kids;
  std::vector<std::vector<int>> users(m);  // slot -> the classes with an e-node reading it
  for (size_t i = 0; i < m; ++i) {
    first_node[i] = uint32_t(nodes.size());
    for (ENodeId n : g.nodes(r.classes[i])) {
      NodeReads nr{false, EClassId(), uint32_t(kids.size()), 0};
      Op op = g.op(n);
      if ((op == Op::Replicate || op == Op::Partition) && attr_axis(g.attrs(n), 0) == p) {
        nr.view = true;
        nr.operand = g.find(g.children(n)[0]);
      } else {
        for (EClassId k : g.children(n)) {
          const int s = slot[g.find(k).v];
          if (s < 0) continue;  // outside the region: reads nothing on p
          kids.push_back(s);
          ++nr.count;
          if (users[size_t(s)].empty() || users[size_t(s)].back() != int(i)) users[size_t(s)].push_back(int(i));
        }
      }
      nodes.push_back(nr);
    }
  }
  first_node[m] = uint32_t(nodes.size());
  for (EClassId c : r.classes) slot[c.v] = -1;  // the scratch back as it was
  for (EClassId c : stack) slot[c.v] = -1;      // pushed, never reached (past kMaxRegion)
  // reads[i]: sorted; `top` until first computed. A worklist from the last
  // class down: a class is evaluated again only when a class it reads
  // changed. Every update only shrinks a set, so this reaches the same
  // greatest fixpoint as evaluating every class in rounds.
  std::vector<std::vector<EClassId>> reads(m);
  std::vector<bool> top(m, true), queued(m, true);
  std::deque<int> work;
  for (size_t i = m; i-- > 0;) work.push_back(int(i));
  std::vector<EClassId> node_reads, acc, both;
  // The rounds' bound, as updates: a cycle that has not settled by then
  // keeps what it has (a region is a heuristic; any region is correct).
  size_t budget = 64 * m;
  while (!work.empty() && budget-- > 0) {
    const size_t i = size_t(work.front());
    work.pop_front();
    queued[i] = false;
    bool acc_top = true;
    for (uint32_t e = first_node[i]; e < first_node[i + 1]; ++e) {
      const NodeReads& nr = nodes[e];
      node_reads.clear();
      bool node_top = false;
      if (nr.view) {
        node_reads.push_back(nr.operand);
      } else {
        for (uint32_t j = nr.first; j < nr.first + nr.count; ++j) {
          const size_t k = size_t(kids[j]);
          if (top[k]) {
            node_top = true;
            break;
          }
          node_reads.insert(node_reads.end(), reads[k].begin(), reads[k].end());
        }
        std::sort(node_reads.begin(), node_reads.end());
        node_reads.erase(std::unique(node_reads.begin(), node_reads.end()), node_reads.end());
      }
      if (node_top) continue;
      if (acc_top) {
        acc = node_reads;
        acc_top = false;
      } else {
        both.clear();
        std::set_intersection(acc.begin(), acc.end(), node_reads.begin(), node_reads.end(), std::back_inserter(both));
        acc.swap(both);
      }
    }
    if (acc_top || (!top[i] && acc == reads[i])) continue;
    top[i] = false;
    reads[i] = acc;
    for (int u : users[i])
      if (!queued[size_t(u)]) {
        queued[size_t(u)] = true;
        work.push_back(u);
      }
  }
  if (!top[0]) r.reads = reads[0], r.settled = true;
  std::sort(r.classes.begin(), r.classes.end());
  return keep(std::move(r));
}

// Where a value comes from in the program: the earliest e-node of the
// global class it is a tile of (following partition and replicate down).
// Fused tuples list their components in this order, so each set of
// reductions is fused once, in the order the program computes them.
uint32_t origin_rank(const EGraph& g, EClassId c) {
  c = g.find(c);
  for (int depth = 0; depth < 16; ++depth) {
    std::optional<EClassId> down;
    for (ENodeId n : g.nodes(c))
      if (g.op(n) == Op::Partition || g.op(n) == Op::Replicate) {
        down = g.find(g.children(n)[0]);
        break;
      }
    if (!down) break;
    c = *down;
  }
  uint32_t rank = UINT32_MAX;
  for (ENodeId n : g.nodes(c)) rank = std::min(rank, n.v);
  return rank;
}

// The rank of each component of a preduce: of its finished value (the
// preduce itself, or proj i of it).
std::vector<uint32_t> component_ranks(const EGraph& g, EClassId pre) {
  pre = g.find(pre);
  const Type& t = g.type(pre).get();
  if (!t.is_tuple) return {origin_rank(g, pre)};
  std::vector<uint32_t> out;
  EClassId kids[] = {pre};
  for (uint32_t i = 0; i < t.parts.size(); ++i) {
    std::optional<EClassId> pc = g.lookup(Op::Proj, {i, 0, 0}, kids);
    out.push_back(pc ? origin_rank(g, *pc) : UINT32_MAX);
  }
  return out;
}

// The finished values a preduce class stands for: itself, and for a tuple
// reduction the classes of its components (proj i of it).
std::vector<EClassId> finished_values(const EGraph& g, EClassId c) {
  c = g.find(c);
  std::vector<EClassId> out = {c};
  const Type& t = g.type(c).get();
  if (t.is_tuple) {
    EClassId kids[] = {c};
    for (uint32_t i = 0; i < t.parts.size(); ++i)
      if (std::optional<EClassId> pc = g.lookup(Op::Proj, {i, 0, 0}, kids)) out.push_back(g.find(*pc));
  }
  return out;
}

// The classes a preduce class is a partition or replicate of: two
// reductions that are tilings of one value (a block of it beside the whole
// of it) need not share a pass.
std::vector<EClassId> views_of(const EGraph& g, EClassId c) {
  std::vector<EClassId> out;
  for (ENodeId n : g.nodes(g.find(c)))
    if (g.op(n) == Op::Partition || g.op(n) == Op::Replicate) out.push_back(g.find(g.children(n)[0]));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool reads_any(const Region& r, const std::vector<EClassId>& values) {
  for (EClassId v : values)
    if (std::binary_search(r.reads.begin(), r.reads.end(), v)) return true;
  return false;
}

bool intersect(const std::vector<EClassId>& a, const std::vector<EClassId>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    a[i] < b[j] ? ++i : ++j;
  }
  return false;
}

// The components of a preduce's body: the body itself, or the operands of a
// tuple node in its class.
bool components_of(const EGraph& g, EClassId body, std::vector<EClassId>& out) {
  out.clear();
  if (!g.type(body).get().is_tuple) {
    out.push_back(g.find(body));
    return true;
  }
  for (ENodeId n : g.nodes(g.find(body))) {
    if (g.op(n) != Op::Tuple) continue;
    for (EClassId k : g.children(n)) out.push_back(g.find(k));
    return true;
  }
  return false;
}

// A component's spec with its repair references moved through `map`.
std::optional<RedComponent> remapped(RedComponent c, const std::vector<int>& map) {
  uint8_t* refs[2] = {&c.arg0, &c.arg1};
  int n = c.repair == Repair::None ? 0 : c.repair == Repair::WelfordM2 ? 2 : 1;
  for (int i = 0; i < n; ++i) {
    if (*refs[i] >= map.size() || map[*refs[i]] < 0) return std::nullopt;
    *refs[i] = uint8_t(map[*refs[i]]);
  }
  return c;
}

void fuse_independent(RuleCtx& c, FusionIndex& state) {
  const EGraph& g = c.egraph();
  FusionIndex& index = index_for(state, g);
  const Axis p = c.axis("?p");
  const RedId r1 = c.red("?r");
  const EClassId root = c.match.root(), x1 = c.match.cls("?x");
  std::optional<std::vector<uint32_t>> scope = scope_of(g.type(x1).get(), p);
  std::vector<EClassId> comps1, comps2;
  if (!scope || !components_of(g, x1, comps1)) return;
  auto group = index.groups.find({p.pack(), *scope});
  if (group == index.groups.end()) return;
  const Reduction red1 = r1.get();
  const Region* region1 = nullptr;  // computed on first need
  std::vector<EClassId> finished1, views1;
  std::vector<uint32_t> ranks1;

  for (ENodeId n : group->second) {
    const EClassId other = g.class_of(n);
    if (other == root) continue;
    const EClassId x2 = g.find(g.children(n)[0]);
    // The key packs 21 bits per id; a collision only skips a fusion.
    const uint64_t key = (uint64_t(root.v) << 42) ^ (uint64_t(x1.v) << 21) ^ uint64_t(n.v);
    if (!c.structural() && index.memo.done.contains(key)) continue;
    if (!components_of(g, x2, comps2)) continue;
    if (!region1) {
      region1 = &region_of(index, g, p, x1);
      finished1 = finished_values(g, root);
      views1 = views_of(g, root);
      ranks1 = component_ranks(g, root);
    }
    const Region& region2 = region_of(index, g, p, x2);
    // One pass over shared data (the bodies meet below), and independent:
    // neither body reads the other's finished value.
    if (!intersect(region1->classes, region2.classes)) continue;
    if (reads_any(*region1, finished_values(g, other)) || reads_any(region2, finished1)) continue;
    if (intersect(views1, views_of(g, other))) continue;

    // Root's components first, then the partner's, each deduplicated
    // against what is there (the same component over the same class).
    const Reduction red2 = attr_red(g.attrs(n), 1).get();
    Reduction fused = red1;
    std::vector<EClassId> classes = comps1;
    std::vector<int> map2(comps2.size(), -1);
    bool ok = true;
    for (size_t j = 0; j < comps2.size() && ok; ++j) {
      std::optional<RedComponent> spec = remapped(red2.components[j], map2);
      if (!spec) {
        ok = false;
        break;
      }
      for (size_t i = 0; i < classes.size(); ++i)
        if (classes[i] == comps2[j] && fused.components[i] == *spec) map2[j] = int(i);
      if (map2[j] < 0) {
        map2[j] = int(classes.size());
        classes.push_back(comps2[j]);
        fused.components.push_back(*spec);
      }
    }
    if (!ok || classes.size() == comps1.size() || int(classes.size()) > c.opts.max_fused_arity) continue;
    // The partner's new components come after the root's, in program order.
    // (A component whose finished value is not in the e-graph yet has no
    // rank and does not constrain the order.)
    std::vector<uint32_t> ranks2 = component_ranks(g, other);
    bool in_order = true;
    for (size_t j = 0; j < comps2.size(); ++j) {
      if (map2[j] < int(comps1.size()) || ranks2[j] == UINT32_MAX) continue;
      for (uint32_t r : ranks1)
        if (r != UINT32_MAX) in_order &= r < ranks2[j] || (r == ranks2[j] && root < other);
    }
    if (!in_order) continue;
    if (!c.structural()) index.memo.done.insert(key);
    if (fused.validate()) continue;

    std::vector<Ref> kids;
    for (EClassId k : classes) kids.push_back(c.b.cls(k));
    Ref tuple = c.b.add(Op::Tuple, attrs_none(), kids);
    Ref state = c.b.add(Op::PReduce, axis_red_attrs(p, RedId::intern(fused)), {tuple});
    auto view = [&](const std::vector<int>& map) {
      if (map.size() == 1) return c.b.add(Op::Proj, {uint32_t(map[0]), 0, 0}, {state});
      std::vector<Ref> parts;
      for (int i : map) parts.push_back(c.b.add(Op::Proj, {uint32_t(i), 0, 0}, {state}));
      return c.b.add(Op::Tuple, attrs_none(), parts);
    };
    std::vector<int> map1(comps1.size());
    for (size_t i = 0; i < map1.size(); ++i) map1[i] = int(i);
    c.equal(c.root, view(map1));
    c.equal(c.node(n), view(map2));
  }
}

}  // namespace

void reduction_fusion_rules(Table& t) {
  repair_rules(t);
  t.stateful("fuse-independent", "(preduce ?p ?r ?x)",
             "preduce(p, R1 R2, tuple(x1.., x2..)) with each partner preduce over p in the same scope, "
             "components deduplicated",
             [] {
               // One index per compiled rule: a runner works on one e-graph.
               auto index = std::make_shared<FusionIndex>();
               return Applier([index](RuleCtx& c) { fuse_independent(c, *index); });
             });
}

}  // namespace eqf::rules
