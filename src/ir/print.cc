// The printer: canonical text for a Program (docs/ir.md).
//
// Canonical means: dims, then inputs in declaration order, then one `let` per
// bound node in node-id order (children before parents, so every let comes
// after the lets it uses), then outputs with their layouts. A node is bound
// if the source named it (Program::name_of) or if it is an unnamed non-leaf
// used more than once (t0, t1, ...). Parsing the text and printing again
// reproduces it exactly: the re-parsed program names exactly the bound nodes,
// and creates them in the printed order.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>

#include "eqiforge/ir/parse.h"

namespace eqf {
namespace {

// The shortest text that reads back as the same double (std::to_chars);
// infinities and NaN spelled as the parser reads them.
std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string attr_text(AttrKind kind, const Attrs& attrs, int slot) {
  switch (kind) {
    case AttrKind::Sym:
    case AttrKind::Dim:
      return std::string(attr_sym(attrs, slot).str());
    case AttrKind::Axis:
      return attr_axis(attrs, slot).name();
    case AttrKind::Red:
      return reduction_text(attr_red(attrs, slot));
    case AttrKind::DType:
      return std::string(dtype_name(attr_dtype(attrs, slot)));
    case AttrKind::Int:
      return std::to_string(attrs[slot]);
    case AttrKind::F64:
      return number_text(attr_f64(Attrs{attrs[slot], attrs[slot + 1], 0}));
    case AttrKind::None:
      break;
  }
  return "";
}

// "(op attrs..." for an application, using the sum / max sugar for plain
// reductions. Leaves are not printed through here.
std::string application_head(const Node& n) {
  const OpInfo& info = op_info(n.op);
  if (n.op == Op::Reduce) {
    RedId r = attr_red(n.attrs, 1);
    const char* sugar = r == RedId::add() ? "sum" : r == RedId::max() ? "max" : nullptr;
    if (sugar) return std::string("(") + sugar + " " + attr_text(AttrKind::Dim, n.attrs, 0);
  }
  std::string out = "(" + std::string(info.name);
  int slot = 0;
  for (AttrKind k : info.attrs) {
    if (k == AttrKind::None) continue;
    out += " " + attr_text(k, n.attrs, slot);
    slot += k == AttrKind::F64 ? 2 : 1;
  }
  return out;
}

std::string layout_text(const std::vector<Symbol>& layout) {
  std::string out = "[";
  for (size_t i = 0; i < layout.size(); ++i) out += (i ? " " : "") + std::string(layout[i].str());
  return out + "]";
}

class Printer {
 public:
  explicit Printer(const Program& p) : p_(p), binding_(p.size()) {}

  // Writes the expression of `root` on one line. Bound nodes other than
  // `defining` (the let being written) appear by name. Iterative, so deep
  // terms do not exhaust the native stack.
  void write_expr(std::string& out, NodeId root, NodeId defining = {}) const {
    struct Work {
      NodeId node;
      const char* text;  // non-null: emit this instead of a node
    };
    std::vector<Work> work{{root, nullptr}};
    while (!work.empty()) {
      Work w = work.back();
      work.pop_back();
      if (w.text) {
        out += w.text;
        continue;
      }
      const Node& n = p_.node(w.node);
      if (w.node != defining && binding_[w.node.v].valid()) {
        out += binding_[w.node.v].str();
      } else if (n.op == Op::Input) {
        out += attr_sym(n.attrs, 0).str();
      } else if (n.op == Op::Const) {
        out += number_text(attr_f64(n.attrs));
      } else {
        out += application_head(n);
        work.push_back({{}, ")"});
        auto kids = p_.children(w.node);
        for (size_t i = kids.size(); i-- > 0;) {
          work.push_back({kids[i], nullptr});
          work.push_back({{}, " "});
        }
      }
    }
  }

  std::string program() {
    bind_nodes();
    std::string out = "(program";
    if (p_.name.valid()) out += " " + std::string(p_.name.str());
    out += "\n  (dims";
    // Collected dims (c_<axis>) come from collect, not from the declaration.
    for (const DimInfo& d : p_.dims.all())
      if (!d.collected_from)
        out += " (" + std::string(d.name.str()) + " " +
               (d.same_as.valid() ? std::string(d.same_as.str()) : std::to_string(d.extent)) + ")";
    out += ")";
    for (const InputDecl& in : p_.inputs())
      out += "\n  (input " + std::string(in.name.str()) + " " + std::string(dtype_name(in.dtype)) + " " +
             layout_text(in.layout) + ")";
    for (uint32_t i = 0; i < p_.size(); ++i) {
      if (!binding_[i].valid()) continue;
      out += "\n  (let " + std::string(binding_[i].str()) + " ";
      write_expr(out, NodeId{i}, NodeId{i});
      out += ")";
    }
    for (const OutputDecl& o : p_.outputs()) {
      out += "\n  (output " + std::string(o.name.str()) + " " + layout_text(o.layout) + " ";
      write_expr(out, o.value);
      out += ")";
    }
    return out + ")\n";
  }

 private:
  // Decides which nodes get a let: named ones, and unnamed non-leaves used
  // more than once among the nodes that are printed.
  void bind_nodes() {
    size_t n = p_.size();
    std::vector<char> printed(n, 0);
    std::vector<uint32_t> uses(n, 0);
    for (const OutputDecl& o : p_.outputs()) printed[o.value.v] = 1, ++uses[o.value.v];
    for (uint32_t i = 0; i < n; ++i)
      if (p_.name_of(NodeId{i}).valid() && p_.node(NodeId{i}).op != Op::Input) printed[i] = 1;
    // Children have smaller ids than their parents: one pass from the top.
    for (uint32_t i = n; i-- > 0;) {
      if (!printed[i]) continue;
      for (NodeId c : p_.children(NodeId{i})) printed[c.v] = 1, ++uses[c.v];
    }

    std::unordered_set<Symbol> taken;
    for (const InputDecl& in : p_.inputs()) taken.insert(in.name);
    for (const OutputDecl& o : p_.outputs()) taken.insert(o.name);
    for (uint32_t i = 0; i < n; ++i)
      if (printed[i] && p_.node(NodeId{i}).op != Op::Input) {
        Symbol name = p_.name_of(NodeId{i});
        if (name.valid()) binding_[i] = name, taken.insert(name);
      }
    // A node also gets a let when its printed term would nest deeper than
    // kMaxInlineDepth: programs built in memory may be deeper than the reader
    // accepts (kSExprMaxDepth), and their text must still parse.
    constexpr uint32_t kMaxInlineDepth = 256;
    std::vector<uint32_t> depth(n, 0);  // nesting of the node's inline text
    int next_temp = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (!printed[i] || op_has(p_.node(NodeId{i}).op, kLeaf)) continue;
      for (NodeId c : p_.children(NodeId{i}))
        depth[i] = std::max(depth[i], binding_[c.v].valid() ? 1u : depth[c.v] + 1);
      if (binding_[i].valid() || (uses[i] < 2 && depth[i] < kMaxInlineDepth)) continue;
      Symbol temp;
      do temp = Symbol::intern("t" + std::to_string(next_temp++));
      while (taken.count(temp));
      binding_[i] = temp;
      taken.insert(temp);
    }
  }

  const Program& p_;
  std::vector<Symbol> binding_;  // per node: the let name it is printed as
};

}  // namespace

std::string print_program(const Program& p) { return Printer(p).program(); }

std::string print_term(const Program& p, NodeId root) {
  std::string out;
  Printer(p).write_expr(out, root);
  return out;
}

}  // namespace eqf
