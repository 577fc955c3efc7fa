#include "eqiforge/egraph/pattern.h"

#include "egraph/attr_syntax.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/op.h"
#include "eqiforge/ir/sexpr.h"
#include "ir/sexpr_release.h"

namespace eqf {
namespace {

// Parses a pattern bottom-up with an explicit stack of the op nodes still
// open (the innermost last), so a deep pattern is bounded by the reader's
// kSExprMaxDepth and not by the native stack. Nodes come out in postorder,
// children before parents, and a node's attribute variables are met before
// its children's variables (the order in which variables get their words).
class PatternParser {
 public:
  PatternParser(const std::string& file, std::vector<PatternVar>& vars, bool define, int& words)
      : file_(file), vars_(vars), define_(define), words_(words) {}

  int parse(const SExpr& root, std::vector<PatternNode>& out) {
    if (root.is_atom()) return parse_atom(root, out);
    std::vector<Open> open;
    open.push_back(open_node(root));
    int done = -1;  // the node just finished, for its parent
    while (!open.empty()) {
      Open& top = open.back();
      if (done >= 0) {
        top.node.children.push_back(done);
        done = -1;
      }
      if (top.next < top.children.size()) {
        const SExpr& child = *top.children[top.next++];
        if (child.is_atom())
          top.node.children.push_back(parse_atom(child, out));
        else
          open.push_back(open_node(child));  // invalidates `top`
        continue;
      }
      out.push_back(std::move(top.node));
      done = int(out.size()) - 1;
      open.pop_back();
    }
    return done;
  }

 private:
  // An op node whose attributes are parsed and whose children are not yet
  // all parsed.
  struct Open {
    PatternNode node;
    std::vector<const SExpr*> children;  // the child expressions, in order
    size_t next = 0;                     // the next child to parse
  };

  Open open_node(const SExpr& e) {
    if (e.kind != SExpr::Kind::List || e.items.empty() || !e.items[0].is_atom())
      fail(e, "expected a pattern: ?var, a number, an input name or (op attributes... children...), got `" +
                  sexpr_text(e) + "`");
    const std::string& head = e.items[0].atom;
    Open o;
    PatternNode& node = o.node;
    std::vector<const SExpr*> args;
    for (size_t i = 1; i < e.items.size(); ++i) args.push_back(&e.items[i]);
    // (sum d X) and (max d X) are (reduce d + X) and (reduce d max X). The
    // inserted reduction is an attribute, so it is used only here.
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
    // A wider node could never match (the e-graph refuses such e-nodes) and
    // its count would not fit the matcher's Atom::num_children.
    if (given_children > Pattern::kMaxChildren)
      fail(e, std::string(info.name) + " has " + std::to_string(given_children) +
                  " children in a pattern; a pattern node takes at most " +
                  std::to_string(Pattern::kMaxChildren) + " (the e-graph's limit on an e-node's children)");
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
    o.children.assign(args.begin() + num_attrs, args.end());
    node.children.reserve(o.children.size());
    return o;
  }

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
  ReleaseSExprs release_on_exit(items);  // a deep tree, freed without deep recursion
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
