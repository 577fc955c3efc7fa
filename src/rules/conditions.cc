// The conditions the rule tables use beyond the engine's built-in ones
// (has-dim, not-has-dim, is-literal, ...): registered once, by name, with the
// e-graph's condition registry.
//
//   (global-root)          the matched class has no parallel axes and is not a literal
//   (extent ?n ?d)         ?n is the literal extent of dim ?d (a fact)
//   (max-axes ?x N)        ?x has at most N parallel axes in scope
//   (distinct-dims ?p ?q)  axes ?p and ?q split different dims
//   (not-value ?x V)       ?x is not known to be the literal V (a fact)
//   (not-literal ?x)       ?x is not a literal constant
//   (dims-within ?s ?x)    ?s and ?x are tensors and every dim of ?s is a dim of ?x
//   (fewer-elements ?a ?b) ?a and ?b are tensors and ?a has fewer elements than ?b
//   (sole-split ?x ?d ?p)  in ?x, dim ?d is split by axis ?p alone, at level 0
//                          (its blocks cover the whole dim once)
#include <mutex>

#include "eqiforge/ir/diagnostic.h"
#include "rules/rule_table.h"

namespace eqf::rules {
namespace {

std::string text_of(const char* name, std::span<const SExpr> args) {
  std::string t = std::string("(") + name;
  for (const SExpr& a : args) t += " " + sexpr_text(a);
  return t + ")";
}

void expect(std::span<const SExpr> args, size_t n, const char* name, const std::string& file) {
  if (args.size() != n)
    throw Error(file, args.empty() ? SourceLoc{} : args[0].loc,
                std::string(name) + " expects " + std::to_string(n) + " argument(s), got " +
                    std::to_string(args.size()));
}

// The substitution word of a variable of the left side, of the wanted kind.
int var_word(const SExpr& e, const Pattern& lhs, const std::string& file, bool attr, AttrKind kind) {
  const PatternVar* v = e.is_atom() ? lhs.var(e.atom) : nullptr;
  if (!v || v->is_attr != attr || (attr && v->kind != kind))
    throw Error(file, e.loc,
                std::string("expected ") + (attr ? "an attribute" : "a class") +
                    " variable of the left side " + lhs.text() + ", got `" + sexpr_text(e) + "`");
  return v->word;
}

double number_arg(const SExpr& e, const std::string& file) {
  try {
    if (e.is_atom()) {
      size_t used = 0;
      double v = std::stod(e.atom, &used);
      if (used == e.atom.size()) return v;
    }
  } catch (...) {
  }
  throw Error(file, e.loc, "expected a number, got `" + sexpr_text(e) + "`");
}

// The number of elements of a tensor of type t (every dim whole).
double elements(const Match& m, const TensorType& t) {
  double n = 1;
  for (Symbol d : t.dims)
    if (const DimInfo* info = m.egraph().dims().find(d)) n *= double(info->extent);
  return n;
}

const Type& type_at(const Match& m, int word) { return m.egraph().type(EClassId(m.subst()[word])).get(); }

// A condition on two class variables that holds only when both are tensors
// and `pred` holds of their types.
template <class Pred>
void register_tensor_pair_condition(const char* name, Pred pred) {
  register_condition(name, [name, pred](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
    expect(args, 2, name, file);
    int a = var_word(args[0], lhs, file, false, AttrKind::None);
    int b = var_word(args[1], lhs, file, false, AttrKind::None);
    return Condition{text_of(name, args), false, [a, b, pred](const Match& m) {
                       const Type& ta = type_at(m, a);
                       const Type& tb = type_at(m, b);
                       return !ta.is_tuple && !tb.is_tuple && pred(m, ta.tensor(), tb.tensor());
                     }};
  });
}

}  // namespace

void register_rule_conditions() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_condition("global-root",
                       [](std::span<const SExpr> args, const Pattern&, const std::string& file) {
                         expect(args, 0, "global-root", file);
                         // Literal values are folded by the analysis; rewriting them would only
                         // meet the folded value again, rounded differently.
                         return Condition{"(global-root)", false, [](const Match& m) {
                                            for (const TensorType& t : m.egraph().type(m.root()).get().parts)
                                              if (!t.delta.empty() || t.literal) return false;
                                            return true;
                                          }};
                       });
    register_condition(
        "extent", [](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
          expect(args, 2, "extent", file);
          int n = var_word(args[0], lhs, file, false, AttrKind::None);
          int d = var_word(args[1], lhs, file, true, AttrKind::Dim);
          return Condition{text_of("extent", args), true, [n, d](const Match& m) {
                             const ClassData& data = m.egraph().data(EClassId(m.subst()[n]));
                             const DimInfo* info = m.egraph().dims().find(Symbol::from_raw(m.subst()[d]));
                             return data.has_value && info && !info->collected_from &&
                                    data.value == double(info->extent);
                           }};
        });
    register_condition("max-axes",
                       [](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
                         expect(args, 2, "max-axes", file);
                         int x = var_word(args[0], lhs, file, false, AttrKind::None);
                         size_t limit = size_t(number_arg(args[1], file));
                         return Condition{text_of("max-axes", args), false, [x, limit](const Match& m) {
                                            for (const TensorType& t : type_at(m, x).parts)
                                              if (t.delta.size() > limit) return false;
                                            return true;
                                          }};
                       });
    register_condition(
        "distinct-dims", [](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
          expect(args, 2, "distinct-dims", file);
          int p = var_word(args[0], lhs, file, true, AttrKind::Axis);
          int q = var_word(args[1], lhs, file, true, AttrKind::Axis);
          return Condition{text_of("distinct-dims", args), false, [p, q](const Match& m) {
                             return Axis::unpack(m.subst()[p]).dim != Axis::unpack(m.subst()[q]).dim;
                           }};
        });
    register_condition("not-literal",
                       [](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
                         expect(args, 1, "not-literal", file);
                         int w = var_word(args[0], lhs, file, false, AttrKind::None);
                         return Condition{text_of("not-literal", args), false, [w](const Match& m) {
                                            const Type& t = type_at(m, w);
                                            return t.is_tuple || !t.tensor().literal;
                                          }};
                       });
    register_tensor_pair_condition("dims-within", [](const Match&, const TensorType& s, const TensorType& x) {
      for (Symbol d : s.dims)
        if (!x.has_dim(d)) return false;
      return true;
    });
    register_tensor_pair_condition("fewer-elements", [](const Match& m, const TensorType& a, const TensorType& b) {
      return elements(m, a) < elements(m, b);
    });
    register_condition("sole-split",
                       [](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
                         expect(args, 3, "sole-split", file);
                         int x = var_word(args[0], lhs, file, false, AttrKind::None);
                         int d = var_word(args[1], lhs, file, true, AttrKind::Dim);
                         int p = var_word(args[2], lhs, file, true, AttrKind::Axis);
                         return Condition{text_of("sole-split", args), false, [x, d, p](const Match& m) {
                                            const Type& t = type_at(m, x);
                                            if (t.is_tuple) return false;
                                            Symbol dim = Symbol::from_raw(m.subst()[d]);
                                            Axis axis = Axis::unpack(m.subst()[p]);
                                            if (axis.level != 0 || axis.dim != dim) return false;
                                            return blocking_level(t.tensor(), dim) == 1;
                                          }};
                       });
    register_condition("not-value",
                       [](std::span<const SExpr> args, const Pattern& lhs, const std::string& file) {
                         expect(args, 2, "not-value", file);
                         int x = var_word(args[0], lhs, file, false, AttrKind::None);
                         double v = number_arg(args[1], file);
                         return Condition{text_of("not-value", args), true, [x, v](const Match& m) {
                                            const ClassData& d = m.egraph().data(EClassId(m.subst()[x]));
                                            return !(d.has_value && d.value == v);
                                          }};
                       });
  });
}

}  // namespace eqf::rules
