#include "eqiforge/egraph/pattern.h"

#include "egraph/attr_syntax.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/op.h"
#include "eqiforge/ir/sexpr.h"

namespace eqf {
namespace {

class PatternParser {
 public:
  PatternParser(const std::string& file, std::vector<PatternVar>& vars, bool define, int& words)
      : file_(file), vars_(vars), define_(define), words_(words) {}

  int parse(const SExpr& e, std::vector<PatternNode>& out) {
    if (e.is_atom()) return parse_atom(e, out);
    if (e.kind != SExpr::Kind::List || e.items.empty() || !e.items[0].is_atom())
      fail(e, "expected a pattern: ?var, a number, an input name or (op attributes... children...), got `" +
                  sexpr_text(e) + "`");
    const std::string& head = e.items[0].atom;
    PatternNode node;
    std::vector<const SExpr*> args;
    for (size_t i = 1; i < e.items.size(); ++i) args.push_back(&e.items[i]);
    // (sum d X) and (max d X) are (reduce d + X) and (reduce d max X).
    SExpr red_sugar;
    if (head == "sum" || head == "max") {
      node.op = Op::Reduce;
      red_sugar.kind = SExpr::Kind::Atom;
      red_sugar.atom = head == "sum" ? "+" : "max";
      red_sugar.loc = e.items[0].loc;
      if (!args.empty()) args.insert(args.begin() + 1, &red_sugar);
    } else if (std::optional<Op> op = parse_op(head)) {
      node.op = *op;
    } else {
      fail(e.items[0], "unknown operator `" + head + "` in pattern");
    }
    const OpInfo& info = op_info(node.op);
    int num_attrs = 0;
    while (num_attrs < 3 && info.attrs[num_attrs] != AttrKind::None) ++num_attrs;
    size_t given_children = args.size() >= size_t(num_attrs) ? args.size() - num_attrs : 0;
    if (args.size() < size_t(num_attrs) ||
        (info.arity != kVariadic && given_children != size_t(info.arity))) {
      std::string expected =
          std::to_string(num_attrs) + " attribute(s) and " +
          (info.arity == kVariadic ? std::string("any number of") : std::to_string(info.arity)) +
          " child(ren)";
      fail(e, std::string(info.name) + " expects " + expected + ", got " + std::to_string(args.size()) +
                  " argument(s) in `" + sexpr_text(e) + "`");
    }
    std::string where = "the attributes of " + std::string(info.name);
    for (int a = 0; a < num_attrs; ++a) {
      const SExpr& arg = *args[a];
      int slot = attr_slot(node.op, a);
      if (arg.is_atom() && !arg.atom.empty() && arg.atom[0] == '?') {
        node.attr_var[a] = use_var(arg, true, info.attrs[a]);
      } else {
        parse_attr(arg, info.attrs[a], node.attrs, slot, file_, where);
      }
    }
    for (size_t c = num_attrs; c < args.size(); ++c) node.children.push_back(parse(*args[c], out));
    out.push_back(std::move(node));
    return int(out.size()) - 1;
  }

 private:
  int parse_atom(const SExpr& e, std::vector<PatternNode>& out) {
    PatternNode node;
    double v = 0;
    if (e.atom[0] == '?') {
      node.is_var = true;
      node.var = use_var(e, false, AttrKind::None);
    } else if (parse_number_atom(e.atom, v)) {
      node.op = Op::Const;
      node.attrs = attrs_f64(v);
    } else {
      node.op = Op::Input;
      node.attrs = {Symbol::intern(e.atom).raw(), 0, 0};
    }
    out.push_back(std::move(node));
    return int(out.size()) - 1;
  }

  int use_var(const SExpr& e, bool is_attr, AttrKind kind) {
    if (e.atom.size() < 2) fail(e, "a variable needs a name after `?`");
    for (size_t i = 0; i < vars_.size(); ++i) {
      PatternVar& v = vars_[i];
      if (v.name != e.atom) continue;
      if (v.is_attr != is_attr)
        fail(e, "variable " + v.name + " stands for " + (v.is_attr ? "an attribute" : "an e-class") +
                    " elsewhere but for " + (is_attr ? "an attribute" : "an e-class") + " here");
      if (is_attr && v.kind != kind)
        fail(e, "attribute variable " + v.name + " holds a different kind of attribute elsewhere");
      return int(i);
    }
    if (!define_) fail(e, "variable " + e.atom + " is not bound by the left side");
    PatternVar v;
    v.name = e.atom;
    v.is_attr = is_attr;
    v.kind = kind;
    v.word = words_;
    words_ += is_attr ? attr_width(kind) : 1;
    vars_.push_back(std::move(v));
    return int(vars_.size()) - 1;
  }

  [[noreturn]] void fail(const SExpr& e, const std::string& message) { throw Error(file_, e.loc, message); }

  const std::string& file_;
  std::vector<PatternVar>& vars_;
  bool define_;
  int& words_;
};

int words_of(const std::vector<PatternVar>& vars) {
  int w = 1;
  for (const PatternVar& v : vars) w += v.is_attr ? attr_width(v.kind) : 1;
  return w;
}

}  // namespace

Pattern Pattern::parse(std::string_view text, const std::string& file) {
  std::vector<PatternVar> vars;
  return parse_with(text, file, vars, true);
}

Pattern Pattern::parse_with(std::string_view text, const std::string& file, std::vector<PatternVar>& vars,
                            bool define) {
  std::vector<SExpr> items = read_sexprs(text, file);
  if (items.size() != 1)
    throw Error(file, items.empty() ? SourceLoc{} : items[1].loc,
                "expected exactly one pattern, got " + std::to_string(items.size()) + " in `" +
                    std::string(text) + "`");
  Pattern p;
  p.text_ = sexpr_text(items[0]);
  int words = words_of(vars);
  PatternParser parser(file, vars, define, words);
  parser.parse(items[0], p.nodes_);
  p.vars_ = vars;
  p.subst_words_ = words;
  p.compile();
  return p;
}

const PatternVar* Pattern::var(std::string_view name) const {
  for (const PatternVar& v : vars_)
    if (v.name == name) return &v;
  return nullptr;
}

// Atoms in preorder; the matcher visits them in index order, so a variable's
// first use in that order binds it and later uses compare.
void Pattern::compile() {
  atoms_.clear();
  child_ops_.clear();
  if (is_var()) return;
  std::vector<int> atom_node;  // pattern node of each atom
  std::vector<int> stack = {root()};
  while (!stack.empty()) {  // preorder over op nodes
    int n = stack.back();
    stack.pop_back();
    atom_node.push_back(n);
    const PatternNode& pn = nodes_[n];
    for (auto it = pn.children.rbegin(); it != pn.children.rend(); ++it)
      if (!nodes_[*it].is_var) stack.push_back(*it);
  }
  std::vector<int> atom_of_node(nodes_.size(), -1);
  for (size_t a = 0; a < atom_node.size(); ++a) atom_of_node[atom_node[a]] = int(a);
  std::vector<bool> bound(vars_.size(), false);
  for (size_t a = 0; a < atom_node.size(); ++a) {
    const PatternNode& pn = nodes_[atom_node[a]];
    const OpInfo& info = op_info(pn.op);
    Atom atom{};
    atom.op = pn.op;
    atom.num_children = uint16_t(pn.children.size());
    for (int i = 0; i < 3 && info.attrs[i] != AttrKind::None; ++i) {
      int slot = attr_slot(pn.op, i);
      int width = attr_width(info.attrs[i]);
      for (int w = 0; w < width; ++w) {
        Atom::Check& c = atom.checks[atom.num_checks++];
        c.slot = uint8_t(slot + w);
        if (pn.attr_var[i] < 0) {
          c.mode = kFixed;
          c.value = pn.attrs[slot + w];
        } else {
          const PatternVar& v = vars_[pn.attr_var[i]];
          c.mode = bound[pn.attr_var[i]] ? kCompare : kBind;
          c.value = uint32_t(v.word + w);
        }
      }
      if (pn.attr_var[i] >= 0) bound[pn.attr_var[i]] = true;
    }
    atom.first_child = uint32_t(child_ops_.size());
    for (int ch : pn.children) {
      const PatternNode& cn = nodes_[ch];
      if (cn.is_var) {
        child_ops_.push_back({bound[cn.var] ? kCompare : kBind, uint32_t(vars_[cn.var].word)});
        bound[cn.var] = true;
      } else {
        child_ops_.push_back({kAtom, uint32_t(atom_of_node[ch])});
      }
    }
    atoms_.push_back(atom);
  }
}

}  // namespace eqf
