// The TermBuilder, rule compilation and the bridge to the engine's Rewrite
// (see rule_table.h for why every right side goes through a builder).
#include <algorithm>
#include <memory>

#include "eqiforge/ir/diagnostic.h"
#include "rules/rule_table.h"

namespace eqf::rules {

// ---- the builder ----------------------------------------------------------------

Ref TermBuilder::cls(EClassId c) {
  c = g_.find(c);
  auto it = class_refs_.find(c.v);
  if (it != class_refs_.end()) return it->second;
  Entry e;
  e.is_class = true;
  e.cls = c;
  e.data = g_.data(c);
  entries_.push_back(e);
  Ref r{int32_t(entries_.size() - 1)};
  class_refs_.emplace(c.v, r);
  return r;
}

std::span<const Ref> TermBuilder::kids(Ref r) const {
  const Entry& e = entries_[size_t(r.v)];
  return {kids_.data() + e.first, e.count};
}

Ref TermBuilder::add(Op op, const Attrs& attrs, std::span<const Ref> kids) {
  for (Ref k : kids)
    if (!k.valid()) return Ref{};
  // An existing e-node over existing classes is that class (the runner).
  bool all_classes = true;
  for (Ref k : kids) all_classes &= is_class(k);
  if (reuse_ && all_classes) {
    std::vector<EClassId> cs;
    cs.reserve(kids.size());
    for (Ref k : kids) cs.push_back(class_of(k));
    if (std::optional<EClassId> found = g_.lookup(op, attrs, cs)) return cls(*found);
  }
  uint64_t h = uint64_t(op) * 0x9E3779B97F4A7C15ull;
  for (uint32_t a : attrs) h = (h ^ a) * 0x100000001B3ull;
  for (Ref k : kids) h = (h ^ uint32_t(k.v)) * 0x100000001B3ull;
  auto& bucket = node_refs_[h];
  for (Ref r : bucket) {
    const Entry& e = entries_[size_t(r.v)];
    if (e.op != op || e.attrs != attrs || e.count != kids.size()) continue;
    if (std::equal(kids.begin(), kids.end(), kids_.begin() + e.first)) return r;
  }
  scratch_.clear();
  for (Ref k : kids) scratch_.push_back(data(k));
  Entry e;
  e.op = op;
  e.attrs = attrs;
  std::string why;
  if (!g_.analysis().make(g_, op, attrs, scratch_, e.data, why)) {
    if (reject_.empty()) {
      reject_ = std::string(op_info(op).name) + ": " + why;
      if (all_classes) {
        rejected_ = Rejected{op, attrs, {}};
        for (Ref k : kids) rejected_->kids.push_back(class_of(k));
      }
    }
    return Ref{};
  }
  e.first = uint32_t(kids_.size());
  e.count = uint32_t(kids.size());
  kids_.insert(kids_.end(), kids.begin(), kids.end());
  entries_.push_back(e);
  Ref r{int32_t(entries_.size() - 1)};
  bucket.push_back(r);
  return r;
}

Ref RuleCtx::node(ENodeId n) {
  const EGraph& g = b.egraph();
  if (!structural_) return b.cls(g.class_of(n));
  std::vector<Ref> kids;
  for (EClassId c : g.children(n)) kids.push_back(b.cls(c));
  return b.add(g.op(n), g.attrs(n), kids);
}

// ---- helpers ------------------------------------------------------------------------

int blocking_level(const TensorType& t, Symbol d) {
  int n = 0;
  for (const AxisState& a : t.delta)
    n += (a.state.kind == StateKind::Part || a.state.kind == StateKind::Local) && a.state.dim == d;
  return n;
}

bool is_collected_dim(const EGraph& g, Symbol d) {
  const DimInfo* info = g.dims().find(d);
  return !info || info->collected_from.has_value();
}

bool splittable_dim(const EGraph& g, Symbol d) {
  const DimInfo* info = g.dims().find(d);
  return info && !info->collected_from && info->extent > 1;
}

Ref follow_partition(TermBuilder& b, Ref x, Axis p, Symbol d) {
  if (!x.valid()) return x;
  if (b.is_literal(x)) return x;
  if (b.tensor(x).has_dim(d)) return b.add(Op::Partition, axis_dim_attrs(p, d), {x});
  return b.add(Op::Replicate, axis_attrs(p), {x});
}

Ref follow_replicate(TermBuilder& b, Ref x, Axis p) {
  if (!x.valid() || b.is_literal(x)) return x;
  return b.add(Op::Replicate, axis_attrs(p), {x});
}

std::string tuple_reduction_pattern(Op reduction, bool partition) {
  std::string head = partition ? "(partition ?p ?d" : "(replicate ?p";
  return head + " (proj ?i (" + std::string(op_info(reduction).name) + " ?q ?r ?t)))";
}

std::vector<Ref> follow_into_tuple_reduction(RuleCtx& c, Op reduction, bool partition, bool collect_components) {
  const EGraph& g = c.egraph();
  Axis p = c.axis("?p");
  Symbol d = partition ? c.dim("?d") : Symbol();
  Attrs proj = c.attr("?i");
  Attrs red = {c.attr("?q")[0], c.attr("?r")[0], 0};
  const EClassId t = c.match.cls("?t");
  auto follow = [&](Ref x) { return partition ? follow_partition(c.b, x, p, d) : follow_replicate(c.b, x, p); };
  std::vector<Ref> comps, made;
  bool collected = false;
  for (ENodeId n : g.nodes(t)) {
    comps.clear();
    if (g.op(n) == Op::Tuple) {
      for (EClassId k : g.children(n)) comps.push_back(follow(c.b.cls(k)));
    } else if (collect_components && g.op(n) == Op::Collect && !collected) {
      // The buffer's components, each read as its own load (the same for
      // every collect node of the class).
      collected = true;
      const size_t parts = g.type(t).get().parts.size();
      for (size_t k = 0; k < parts; ++k) comps.push_back(follow(c.b.add(Op::Proj, {uint32_t(k), 0, 0}, {c.b.cls(t)})));
    } else {
      continue;
    }
    Ref r = c.b.add(reduction, red, {c.b.add(Op::Tuple, attrs_none(), comps)});
    c.equal(c.root, c.b.add(Op::Proj, proj, {r}));
    made.push_back(r);
  }
  return made;
}

int attr_slot_of(Op op, int index) {
  const OpInfo& info = op_info(op);
  int slot = 0;
  for (int i = 0; i < index; ++i) slot += info.attrs[i] == AttrKind::F64 ? 2 : 1;
  return slot;
}

std::string op_pattern(Op op, std::string_view attr_prefix, std::string_view child_prefix) {
  const OpInfo& info = op_info(op);
  std::string s = "(" + std::string(info.name);
  for (int i = 0; i < 3 && info.attrs[i] != AttrKind::None; ++i)
    s += " " + std::string(attr_prefix) + std::to_string(i);
  for (int i = 0; i < info.arity; ++i) s += " " + std::string(child_prefix) + std::to_string(i);
  return s + ")";
}

Attrs generated_attrs(const RuleCtx& c, Op op, std::string_view attr_prefix) {
  const OpInfo& info = op_info(op);
  Attrs out{0, 0, 0};
  for (int i = 0; i < 3 && info.attrs[i] != AttrKind::None; ++i) {
    Attrs a = c.attr(std::string(attr_prefix) + std::to_string(i));
    const int slot = attr_slot_of(op, i);
    out[size_t(slot)] = a[0];
    if (info.attrs[i] == AttrKind::F64) out[size_t(slot + 1)] = a[1];
  }
  return out;
}

std::vector<Ref> generated_kids(RuleCtx& c, Op op, std::string_view child_prefix) {
  std::vector<Ref> kids;
  for (int i = 0; i < op_info(op).arity; ++i)
    kids.push_back(c.var(std::string(child_prefix) + std::to_string(i)));
  return kids;
}

std::string op_kebab(Op op) {
  std::string s(op_info(op).name);
  for (char& ch : s)
    if (ch == '_') ch = '-';
  return s;
}

std::string conds(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += " ";
    out += p;
  }
  return out;
}

// ---- tables ---------------------------------------------------------------------------

void Table::rule(std::string name, std::string lhs, std::string rhs, std::string conditions) {
  RuleSpec s;
  s.family = family_;
  s.name = std::move(name);
  s.lhs = std::move(lhs);
  s.rhs = std::move(rhs);
  s.conditions = std::move(conditions);
  specs_.push_back(std::move(s));
}

void Table::birule(std::string name, std::string lhs, std::string rhs, std::string conditions) {
  rule(name, lhs, rhs, conditions);
  rule(name + "-rev", rhs, lhs, conditions);
}

void Table::computed(std::string name, std::string lhs, std::string computes, Applier apply,
                     std::string conditions, bool pure) {
  RuleSpec s;
  s.family = family_;
  s.name = std::move(name);
  s.lhs = std::move(lhs);
  s.computes = std::move(computes);
  s.apply = std::move(apply);
  s.conditions = std::move(conditions);
  s.pure = pure;
  specs_.push_back(std::move(s));
}

void Table::stateful(std::string name, std::string lhs, std::string computes, std::function<Applier()> make,
                     std::string conditions) {
  computed(std::move(name), std::move(lhs), std::move(computes), Applier(), std::move(conditions),
           /*pure=*/false);
  specs_.back().make_apply = std::move(make);
}

// ---- compiling and applying -------------------------------------------------------------

CompiledRule compile(const RuleSpec& spec) {
  register_rule_conditions();
  const std::string file = "rule " + spec.name;
  CompiledRule r{spec, Pattern::parse(spec.lhs, file), std::nullopt, {}};
  if (!spec.rhs.empty()) {
    std::vector<PatternVar> vars(r.lhs.vars().begin(), r.lhs.vars().end());
    r.rhs = Pattern::parse_with(spec.rhs, file, vars, /*define=*/false);
  } else if (spec.make_apply) {
    r.spec.apply = spec.make_apply();
  } else if (!spec.apply) {
    throw Error(file + ": neither a right side nor an applier");
  }
  r.conditions = parse_conditions(spec.conditions, r.lhs, file);
  return r;
}

Ref instantiate(TermBuilder& b, const Pattern& p, const Match& m) {
  std::span<const PatternNode> nodes = p.nodes();
  std::span<const PatternVar> vars = p.vars();
  const uint32_t* subst = m.subst();
  std::vector<Ref> at(nodes.size());
  std::vector<Ref> kids;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const PatternNode& pn = nodes[i];
    if (pn.is_var) {
      at[i] = b.cls(EClassId(subst[vars[size_t(pn.var)].word]));
      continue;
    }
    Attrs a = pn.attrs;
    for (int k = 0; k < 3; ++k) {
      if (pn.attr_var[k] < 0) continue;
      const PatternVar& v = vars[size_t(pn.attr_var[k])];
      const int slot = attr_slot_of(pn.op, k);
      const int width = v.kind == AttrKind::F64 ? 2 : 1;
      for (int w = 0; w < width; ++w) a[size_t(slot + w)] = subst[v.word + w];
    }
    kids.clear();
    for (int c : pn.children) kids.push_back(at[size_t(c)]);
    at[i] = b.add(pn.op, a, kids);
  }
  return at.back();
}

void run_applier(const CompiledRule& rule, RuleCtx& ctx, bool instantiate_lhs) {
  ctx.root = instantiate_lhs ? instantiate(ctx.b, rule.lhs, ctx.match) : ctx.b.cls(ctx.match.root());
  if (!ctx.root.valid()) return;
  if (rule.rhs) {
    ctx.equal(ctx.root, instantiate(ctx.b, *rule.rhs, ctx.match));
    return;
  }
  rule.spec.apply(ctx);
}

namespace {

// Adds a built ref's nodes to the e-graph, children first.
std::optional<EClassId> materialize(TermBuilder& b, ApplyContext& ctx, Ref r, std::vector<EClassId>& memo) {
  if (memo[size_t(r.v)].valid()) return memo[size_t(r.v)];
  if (b.is_class(r)) return memo[size_t(r.v)] = b.class_of(r);
  std::vector<EClassId> kids;
  for (Ref k : b.kids(r)) {
    std::optional<EClassId> c = materialize(b, ctx, k, memo);
    if (!c) return std::nullopt;
    kids.push_back(*c);
  }
  std::optional<EClassId> c = ctx.add(b.op(r), b.attrs(r), kids);
  if (c) memo[size_t(r.v)] = *c;
  return c;
}

}  // namespace

Rewrite to_rewrite(const CompiledRule& rule, const RuleOptions& opts) {
  auto shared = std::make_shared<const CompiledRule>(rule);
  ApplyFn fn = [shared, opts](ApplyContext& ctx) -> std::optional<EClassId> {
    TermBuilder b(ctx.egraph(), /*reuse=*/true);
    RuleCtx rc(b, ctx.match(), opts, /*structural=*/false);
    run_applier(*shared, rc, /*instantiate_lhs=*/false);
    EGraph& g = ctx.egraph();
    const EClassId root = ctx.match().root();
    std::optional<EClassId> result;
    bool merged = false;
    std::vector<EClassId> memo;
    for (auto [x, y] : rc.equalities) {
      // Classes of different types are never united: a right side the
      // typing rules give another type is simply not applied.
      if (b.data(x).type != b.data(y).type) continue;
      memo.resize(b.size(), EClassId());
      std::optional<EClassId> cx = materialize(b, ctx, x, memo);
      std::optional<EClassId> cy = materialize(b, ctx, y, memo);
      if (!cx || !cy) continue;
      if (!result && g.find(*cx) == g.find(root)) {
        result = *cy;
        continue;
      }
      merged |= g.merge(*cx, *cy);
    }
    if (!result && merged) result = root;
    // Nothing applied because a node did not type-check: show the engine the
    // same refusal, so the rule's "rejected" statistic counts it.
    if (!result && rc.equalities.empty() && b.first_rejected()) {
      const TermBuilder::Rejected& r = *b.first_rejected();
      ctx.add(r.op, r.attrs, r.kids);
    }
    return result;
  };
  return rewrite_fn(rule.spec.name, rule.spec.lhs, std::move(fn), rule.spec.conditions, rule.spec.pure);
}

}  // namespace eqf::rules
