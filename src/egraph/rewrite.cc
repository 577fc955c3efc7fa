#include "eqiforge/egraph/rewrite.h"

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>

#include "egraph/attr_syntax.h"
#include "eqiforge/ir/diagnostic.h"
#include "ir/sexpr_release.h"

namespace eqf {

// ---- matches --------------------------------------------------------------------------

EClassId Match::cls(std::string_view var) const {
  const PatternVar* v = lhs_->var(var);
  if (!v || v->is_attr)
    throw Error("rule pattern " + lhs_->text() + " has no class variable " + std::string(var));
  return g_->find(EClassId(subst_[v->word]));
}

Attrs Match::attr(std::string_view var) const {
  const PatternVar* v = lhs_->var(var);
  if (!v || !v->is_attr)
    throw Error("rule pattern " + lhs_->text() + " has no attribute variable " + std::string(var));
  Attrs a{subst_[v->word], 0, 0};
  if (attr_width(v->kind) == 2) a[1] = subst_[v->word + 1];
  return a;
}

// ---- conditions -------------------------------------------------------------------------

namespace {

[[noreturn]] void arg_fail(const SExpr& e, const std::string& file, const std::string& msg) {
  throw Error(file, e.loc, msg);
}

// A class variable's word in the substitution.
int class_arg(const SExpr& e, const Pattern& lhs, const std::string& file) {
  const PatternVar* v = e.is_atom() ? lhs.var(e.atom) : nullptr;
  if (!v || v->is_attr)
    arg_fail(e, file,
             "expected a class variable of the left side " + lhs.text() + ", got `" + sexpr_text(e) + "`");
  return v->word;
}

// An attribute argument: a variable of the left side of kind k, or a literal.
struct AttrArg {
  int word = -1;       // a variable's word, or -1
  uint32_t value = 0;  // the literal's (first) slot
  uint32_t get(const uint32_t* subst) const { return word >= 0 ? subst[word] : value; }
};
AttrArg attr_arg(const SExpr& e, AttrKind k, const Pattern& lhs, const std::string& file) {
  AttrArg a;
  if (e.is_atom() && !e.atom.empty() && e.atom[0] == '?') {
    const PatternVar* v = lhs.var(e.atom);
    if (!v || !v->is_attr || v->kind != k)
      arg_fail(e, file,
               "expected an attribute variable of the left side " + lhs.text() + ", got `" + e.atom + "`");
    a.word = v->word;
    return a;
  }
  Attrs attrs{0, 0, 0};
  parse_attr(e, k, attrs, 0, file, "a condition");
  a.value = attrs[0];
  return a;
}

void expect_args(std::span<const SExpr> args, size_t n, const char* name, const SExpr* where,
                 const std::string& file) {
  if (args.size() != n)
    throw Error(file, where ? where->loc : SourceLoc{},
                std::string(name) + " expects " + std::to_string(n) + " argument(s), got " +
                    std::to_string(args.size()));
}

bool type_has_dim(const Type& t, Symbol d) {
  for (const TensorType& p : t.parts)
    if (p.has_dim(d)) return true;
  return false;
}

bool type_has_axis(const Type& t, Axis p) {
  for (const TensorType& part : t.parts)
    if (part.state(p)) return true;
  return false;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, ConditionFactory> factories;
};

Condition type_condition(std::string text, std::function<bool(const Match&)> f) {
  return Condition{std::move(text), false, std::move(f)};
}

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    auto& f = reg->factories;
    auto text_of = [](const char* name, std::span<const SExpr> args) {
      std::string t = std::string("(") + name;
      for (const SExpr& a : args) t += " " + sexpr_text(a);
      return t + ")";
    };
    // Facts: literal constants.
    f["is-literal"] = [text_of](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
      expect_args(args, 1, "is-literal", nullptr, file);
      int w = class_arg(args[0], lhs, file);
      return Condition{text_of("is-literal", args), true,
                       [w](const Match& m) { return m.egraph().data(EClassId(m.subst()[w])).has_value; }};
    };
    f["is-value"] = [text_of](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
      expect_args(args, 2, "is-value", nullptr, file);
      int w = class_arg(args[0], lhs, file);
      double v = 0;
      if (!args[1].is_atom() || !parse_number_atom(args[1].atom, v))
        arg_fail(args[1], file, "is-value expects a number, got `" + sexpr_text(args[1]) + "`");
      return Condition{text_of("is-value", args), true, [w, v](const Match& m) {
                         const ClassData& d = m.egraph().data(EClassId(m.subst()[w]));
                         return d.has_value && d.value == v;
                       }};
    };
    f["is-nonzero"] = [text_of](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
      expect_args(args, 1, "is-nonzero", nullptr, file);
      int w = class_arg(args[0], lhs, file);
      return Condition{text_of("is-nonzero", args), true, [w](const Match& m) {
                         const ClassData& d = m.egraph().data(EClassId(m.subst()[w]));
                         return d.has_value && d.value != 0;
                       }};
    };
    // Types: dims, axes, equality.
    auto dim_condition = [text_of](const char* name, bool want) {
      return [text_of, name, want](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
        expect_args(args, 2, name, nullptr, file);
        int w = class_arg(args[0], lhs, file);
        AttrArg d = attr_arg(args[1], AttrKind::Dim, lhs, file);
        return type_condition(text_of(name, args), [w, d, want](const Match& m) {
          const Type& t = m.egraph().type(EClassId(m.subst()[w])).get();
          return type_has_dim(t, Symbol::from_raw(d.get(m.subst()))) == want;
        });
      };
    };
    f["has-dim"] = dim_condition("has-dim", true);
    f["not-has-dim"] = dim_condition("not-has-dim", false);
    auto axis_condition = [text_of](const char* name, bool want) {
      return [text_of, name, want](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
        expect_args(args, 2, name, nullptr, file);
        int w = class_arg(args[0], lhs, file);
        AttrArg p = attr_arg(args[1], AttrKind::Axis, lhs, file);
        return type_condition(text_of(name, args), [w, p, want](const Match& m) {
          const Type& t = m.egraph().type(EClassId(m.subst()[w])).get();
          return type_has_axis(t, Axis::unpack(p.get(m.subst()))) == want;
        });
      };
    };
    f["has-axis"] = axis_condition("has-axis", true);
    f["not-has-axis"] = axis_condition("not-has-axis", false);
    f["same-type"] = [text_of](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
      expect_args(args, 2, "same-type", nullptr, file);
      int a = class_arg(args[0], lhs, file), b = class_arg(args[1], lhs, file);
      return type_condition(text_of("same-type", args), [a, b](const Match& m) {
        return m.egraph().type(EClassId(m.subst()[a])) == m.egraph().type(EClassId(m.subst()[b]));
      });
    };
    f["is-tensor"] = [text_of](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
      expect_args(args, 1, "is-tensor", nullptr, file);
      int w = class_arg(args[0], lhs, file);
      return type_condition(text_of("is-tensor", args), [w](const Match& m) {
        return !m.egraph().type(EClassId(m.subst()[w])).get().is_tuple;
      });
    };
    f["no-axes"] = [text_of](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
      expect_args(args, 1, "no-axes", nullptr, file);
      int w = class_arg(args[0], lhs, file);
      return type_condition(text_of("no-axes", args), [w](const Match& m) {
        for (const TensorType& p : m.egraph().type(EClassId(m.subst()[w])).get().parts)
          if (!p.delta.empty()) return false;
        return true;
      });
    };
    f["has-dtype"] = [text_of](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
      expect_args(args, 2, "has-dtype", nullptr, file);
      int w = class_arg(args[0], lhs, file);
      AttrArg t = attr_arg(args[1], AttrKind::DType, lhs, file);
      return type_condition(text_of("has-dtype", args), [w, t](const Match& m) {
        const Type& ty = m.egraph().type(EClassId(m.subst()[w])).get();
        return !ty.is_tuple && !ty.tensor().literal && uint32_t(ty.tensor().dtype) == t.get(m.subst());
      });
    };
    return reg;
  }();
  return *r;
}

}  // namespace

void register_condition(const std::string& name, ConditionFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> condition_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, f] : r.factories) out.push_back(name);
  return out;
}

std::vector<Condition> parse_conditions(std::string_view text, const Pattern& lhs, const std::string& file) {
  std::vector<Condition> out;
  std::vector<SExpr> items = read_sexprs(text, file);
  ReleaseSExprs release_on_exit(items);  // a deep tree, freed without deep recursion
  for (const SExpr& e : items) {
    if (!e.is_list() || e.items.empty() || !e.items[0].is_atom())
      throw Error(file, e.loc, "expected a condition (name args...), got `" + sexpr_text(e) + "`");
    ConditionFactory factory;
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.factories.find(e.items[0].atom);
      if (it == r.factories.end()) {
        std::string known;
        for (const auto& [name, f] : r.factories) known += (known.empty() ? "" : ", ") + name;
        throw Error(file, e.items[0].loc, "unknown condition `" + e.items[0].atom + "`; known: " + known);
      }
      factory = it->second;
    }
    std::span<const SExpr> args(e.items.data() + 1, e.items.size() - 1);
    out.push_back(factory(args, lhs, file));
  }
  return out;
}

// ---- appliers ---------------------------------------------------------------------------

std::optional<EClassId> ApplyContext::add(Op op, const Attrs& attrs, std::span<const EClassId> children) {
  size_t before = g_.num_nodes();
  std::string why;
  std::optional<EClassId> c = g_.try_add(op, attrs, children, &why);
  nodes_added_ += g_.num_nodes() - before;
  if (!c && reject_.empty()) reject_ = std::string(op_info(op).name) + ": " + why;
  return c;
}

namespace {

// Whether two class data are the same, bit for bit (a NaN literal equals
// itself here).
bool same_data(const ClassData& x, const ClassData& y) {
  return x.type == y.type && x.has_value == y.has_value &&
         (!x.has_value || std::bit_cast<uint64_t>(x.value) == std::bit_cast<uint64_t>(y.value));
}

}  // namespace

std::optional<EClassId> RhsBuilder::build(EGraph& g, const Pattern& rhs, const uint32_t* subst,
                                          ApplyResult& result) {
  std::span<const PatternNode> nodes = rhs.nodes();
  std::span<const PatternVar> vars = rhs.vars();
  const size_t n = nodes.size();
  cls_.assign(n, EClassId());
  data_.resize(n);
  attrs_.resize(n);
  bool any_new = false;
  // Phase 1: look every node up, or type it; nothing is added yet. A node is
  // typed from its children's data, which data_ keeps (for the children
  // that exist, as they were then) so phase 2 can tell whether it still
  // holds.
  for (size_t i = 0; i < n; ++i) {
    const PatternNode& pn = nodes[i];
    if (pn.is_var) {
      cls_[i] = g.find(EClassId(subst[vars[pn.var].word]));
      continue;
    }
    Attrs a = pn.attrs;
    for (int k = 0; k < 3; ++k) {
      if (pn.attr_var[k] < 0) continue;
      const PatternVar& v = vars[pn.attr_var[k]];
      int slot = attr_slot(pn.op, k);
      for (int w = 0; w < attr_width(v.kind); ++w) a[slot + w] = subst[v.word + w];
    }
    attrs_[i] = a;
    bool resolved = true;
    children_.clear();
    for (int ch : pn.children) {
      resolved &= cls_[ch].valid();
      children_.push_back(cls_[ch]);
    }
    if (resolved) {  // children are canonical (find() or lookup results)
      if (std::optional<EClassId> c = g.lookup_canonical(g.node_hash(pn.op, a, children_), pn.op, a, children_)) {
        cls_[i] = *c;
        continue;
      }
    }
    child_data_.clear();
    for (int ch : pn.children) {
      if (cls_[ch].valid()) data_[ch] = g.data(cls_[ch]);
      child_data_.push_back(data_[ch]);
    }
    std::string why;
    if (!g.analysis().make(g, pn.op, a, child_data_, data_[i], why)) {
      result.type_rejected = true;
      result.reason = std::string(op_info(pn.op).name) + ": " + why;
      return std::nullopt;
    }
    any_new = true;
  }
  // Phase 2: add the new nodes, children first. A node whose children are
  // as phase 1 typed them (same canonical class, same data) is added with
  // that type; otherwise (an earlier add's modify() united classes) it takes
  // the general path, which types it again.
  if (any_new) {
    for (size_t i = 0; i < n; ++i) {
      if (cls_[i].valid()) continue;
      const PatternNode& pn = nodes[i];
      children_.clear();
      bool unchanged = true;
      for (int ch : pn.children) {
        EClassId c = g.find_mut(cls_[ch]);
        unchanged &= c == cls_[ch] && same_data(g.data(c), data_[ch]);
        children_.push_back(c);
      }
      if (unchanged) {
        cls_[i] = g.add_typed(g.node_hash(pn.op, attrs_[i], children_), pn.op, attrs_[i], children_, data_[i]);
        continue;
      }
      std::string why;
      std::optional<EClassId> c = g.try_add(pn.op, attrs_[i], children_, &why);
      if (!c) {  // typed in phase 1, so only an inconsistent analysis gets here
        result.type_rejected = true;
        result.reason = std::string(op_info(pn.op).name) + ": " + why;
        return std::nullopt;
      }
      cls_[i] = *c;
      data_[i] = g.data(*c);
    }
  }
  return cls_[n - 1];
}

bool RhsBuilder::compile(const Pattern& rhs) {
  std::span<const PatternNode> nodes = rhs.nodes();
  std::span<const PatternVar> vars = rhs.vars();
  prog_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const PatternNode& pn = nodes[i];
    Step& st = prog_[i];
    st = Step{};
    if (pn.is_var) {
      st.var_word = uint32_t(vars[pn.var].word);
      continue;
    }
    if (pn.children.size() > Step::kMaxChildren) return false;
    st.op = pn.op;
    st.attrs = pn.attrs;
    for (int k = 0; k < 3; ++k) {
      if (pn.attr_var[k] < 0) continue;
      const PatternVar& v = vars[pn.attr_var[k]];
      int slot = attr_slot(pn.op, k);
      for (int w = 0; w < attr_width(v.kind); ++w)
        st.copies[st.num_copies++] = {uint8_t(slot + w), uint32_t(v.word + w)};
    }
    st.num_children = uint8_t(pn.children.size());
    for (size_t k = 0; k < pn.children.size(); ++k) st.children[k] = uint16_t(pn.children[k]);
  }
  return true;
}

template <bool kCanonical>
void RhsBuilder::lookup_batch(const EGraph& g, const Rewrite& rule, const uint32_t* substs, size_t count) {
  const size_t words = size_t(rule.lhs.subst_words());
  compiled_ = compile(*rule.rhs);
  if (!compiled_) {  // wide tuples: the general path
    for (size_t b = 0; b < count; ++b) found_[b] = false;
    return;
  }
  const size_t n = prog_.size();
  batch_cls_.resize(count * n);
  EClassId* cls = batch_cls_.data();
  for (size_t b = 0; b < count; ++b) found_[b] = true;
  EClassId kids[Step::kMaxChildren];
  for (size_t i = 0; i < n; ++i) {
    const Step& st = prog_[i];
    if (st.var_word != Step::kNoVar) {
      for (size_t b = 0; b < count; ++b) {
        EClassId c(substs[b * words + st.var_word]);
        cls[b * n + i] = kCanonical ? c : g.find(c);
      }
      continue;
    }
    if (st.num_copies == 0 && st.num_children <= 2 && st.attrs[0] == 0 && st.attrs[1] == 0 &&
        st.attrs[2] == 0) {
      // A small key (most right sides: (add (add ?a ?b) ?c)): hashed and
      // probed by EGraph's small-key path, its children kept from the
      // prefetch pass for the probe.
      const uint32_t nk = st.num_children;
      const uint64_t seed = EGraph::small_seed(st.op, nk);
      EClassId* k0 = batch_kid_[0];
      EClassId* k1 = batch_kid_[1];
      for (size_t b = 0; b < count; ++b) {
        if (!found_[b]) continue;
        const EClassId* row = cls + b * n;
        k0[b] = nk > 0 ? row[st.children[0]] : EClassId(0);
        k1[b] = nk > 1 ? row[st.children[1]] : EClassId(0);
        batch_hash_[b] = EGraph::small_hash(seed, nk, k0[b], k1[b]);
        g.prefetch(batch_hash_[b]);
      }
      for (size_t b = 0; b < count; ++b) {
        if (!found_[b]) continue;
        EClassId c = g.lookup_small(batch_hash_[b], st.op, nk, k0[b], k1[b]);
        cls[b * n + i] = c;
        found_[b] = c.valid();
      }
      continue;
    }
    // The node's key under match b: its attributes (literal slots, then the
    // variables' words) and its children's classes.
    auto key = [&](size_t b, Attrs& a) {
      a = st.attrs;
      for (uint8_t k = 0; k < st.num_copies; ++k) a[st.copies[k].slot] = substs[b * words + st.copies[k].word];
      for (uint8_t k = 0; k < st.num_children; ++k) kids[k] = cls[b * n + st.children[k]];
    };
    Attrs a;
    const std::span<const EClassId> ch(kids, st.num_children);
    for (size_t b = 0; b < count; ++b) {
      if (!found_[b]) continue;
      key(b, a);
      batch_hash_[b] = g.node_hash(st.op, a, ch);
      g.prefetch(batch_hash_[b]);
    }
    for (size_t b = 0; b < count; ++b) {
      if (!found_[b]) continue;
      key(b, a);
      std::optional<EClassId> c = g.lookup_canonical(batch_hash_[b], st.op, a, ch);
      if (c)
        cls[b * n + i] = *c;
      else
        found_[b] = false;
    }
  }
}

size_t RhsBuilder::drop_applied(const EGraph& g, const Rewrite& rule, uint32_t* substs, size_t count) {
  const size_t words = size_t(rule.lhs.subst_words());
  const size_t n = rule.rhs->nodes().size();
  lookup_batch<true>(g, rule, substs, count);
  size_t kept = 0;
  for (size_t b = 0; b < count; ++b) {
    if (found_[b] && batch_cls_[b * n + n - 1].v == substs[b * words]) continue;
    if (kept != b) std::copy(substs + b * words, substs + (b + 1) * words, substs + kept * words);
    ++kept;
  }
  return kept;
}

void RhsBuilder::prefetch_changes(const EGraph& g, const Rewrite& rule, const uint32_t* substs, size_t count) {
  if (!compiled_) return;
  const size_t words = size_t(rule.lhs.subst_words());
  const size_t n = prog_.size();
  const EClassId* cls = batch_cls_.data();
  // The classes of the matches that will change the e-graph: a match whose
  // right side is missing reads every variable's class (its data, to type
  // the new nodes; its parent list, which the new nodes join) and the root's
  // (the merge); one whose right side exists in another class, the two
  // classes it merges. A match whose right side is in its own class (most
  // of them) reads nothing more.
  size_t vars = 0;
  for (size_t i = 0; i < n; ++i) vars += prog_[i].var_word != Step::kNoVar;
  EClassId* out = prefetch_cls_;
  size_t m = 0;
  for (size_t b = 0; b < count; ++b) {
    if (m + 2 + vars > kPrefetchClasses) break;  // the most one match adds
    const uint32_t* subst = substs + b * words;
    const EClassId root = g.find(EClassId(subst[0]));
    if (found_[b]) {
      const EClassId rhs = cls[b * n + n - 1];
      if (rhs == root) continue;
      out[m++] = root;
      out[m++] = rhs;
      continue;
    }
    out[m++] = root;
    for (size_t i = 0; i < n; ++i)
      if (prog_[i].var_word != Step::kNoVar) out[m++] = cls[b * n + i];
  }
  for (size_t i = 0; i < m; ++i) g.prefetch_class_slot(out[i]);
  for (size_t i = 0; i < m; ++i) g.prefetch_class_record(out[i]);
  for (size_t i = 0; i < m; ++i) g.prefetch_class_lists(out[i]);
}

void RhsBuilder::apply_batch(EGraph& g, const Rewrite& rule, const uint32_t* substs, size_t count,
                             ApplyResult* results) {
  const Pattern& rhs = *rule.rhs;
  const size_t words = size_t(rule.lhs.subst_words());
  const size_t n = rhs.nodes().size();
  lookup_batch<false>(g, rule, substs, count);
  prefetch_changes(g, rule, substs, count);
  for (size_t b = 0; b < count; ++b) {
    ApplyResult& result = results[b] = ApplyResult{};
    const uint32_t* subst = substs + b * words;
    size_t before = g.num_nodes();
    std::optional<EClassId> c;
    if (found_[b])
      c = batch_cls_[b * n + n - 1];
    else
      c = build(g, rhs, subst, result);
    if (c) {
      result.applied = true;
      result.changed = g.merge(EClassId(subst[0]), *c);
    }
    result.nodes_added = g.num_nodes() - before;
    result.changed |= result.nodes_added > 0;
  }
}

ApplyResult apply_rewrite(EGraph& g, const Rewrite& rule, const uint32_t* subst, RhsBuilder& builder) {
  ApplyResult result;
  size_t before = g.num_nodes();
  Match m(g, rule.lhs, subst);
  std::optional<EClassId> c;
  if (rule.rhs) {
    c = builder.build(g, *rule.rhs, subst, result);
  } else {
    ApplyContext ctx(g, m);
    c = rule.apply_fn(ctx);
    if (!c && !ctx.reject_reason().empty()) {
      result.type_rejected = true;
      result.reason = ctx.reject_reason();
    }
  }
  if (c) {
    result.applied = true;
    result.changed = g.merge(m.root(), *c);
  }
  result.nodes_added = g.num_nodes() - before;
  result.changed |= result.nodes_added > 0;
  return result;
}

// ---- rules ------------------------------------------------------------------------------

std::string Rewrite::text() const {
  std::string t = name + ": " + lhs.text() + " => " + (rhs ? rhs->text() : std::string("<computed>"));
  for (size_t i = 0; i < conditions.size(); ++i) t += (i == 0 ? " if " : " ") + conditions[i].text;
  return t;
}

namespace {

void finish(Rewrite& r) {
  bool facts =
      std::any_of(r.conditions.begin(), r.conditions.end(), [](const Condition& c) { return c.reads_facts; });
  r.skip_seen = r.skip_seen && !facts && !r.lhs.is_var();
}

std::vector<std::string> var_names(const Pattern& p) {
  std::vector<std::string> out;
  for (const PatternVar& v : p.vars()) out.push_back(v.name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Rewrite rewrite(std::string name, std::string_view lhs, std::string_view rhs, std::string_view conditions) {
  const std::string file = "rule " + name;
  Rewrite r;
  r.lhs = Pattern::parse(lhs, file);
  std::vector<PatternVar> vars(r.lhs.vars().begin(), r.lhs.vars().end());
  r.rhs = Pattern::parse_with(rhs, file, vars, false);
  r.conditions = parse_conditions(conditions, r.lhs, file);
  r.name = std::move(name);
  finish(r);
  return r;
}

std::vector<Rewrite> birewrite(std::string name, std::string_view lhs, std::string_view rhs,
                               std::string_view conditions) {
  Pattern l = Pattern::parse(lhs, "rule " + name), rr = Pattern::parse(rhs, "rule " + name);
  if (var_names(l) != var_names(rr))
    throw Error("rule " + name + ": a bidirectional rule needs the same variables on both sides: " +
                l.text() + " and " + rr.text());
  std::vector<Rewrite> out;
  out.push_back(rewrite(name, lhs, rhs, conditions));
  out.push_back(rewrite(name + "-rev", rhs, lhs, conditions));
  return out;
}

Rewrite rewrite_fn(std::string name, std::string_view lhs, ApplyFn fn, std::string_view conditions,
                   bool pure) {
  const std::string file = "rule " + name;
  Rewrite r;
  r.lhs = Pattern::parse(lhs, file);
  r.conditions = parse_conditions(conditions, r.lhs, file);
  r.apply_fn = std::move(fn);
  r.skip_seen = pure;
  r.name = std::move(name);
  finish(r);
  return r;
}

}  // namespace eqf
