#include "codegen/region_text.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "eqiforge/ir/parse.h"

namespace eqf::codegen {
namespace {

std::string number_text(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

class RegionPrinter {
 public:
  RegionPrinter(const Program& p, const LoweredProgram& lp, const Kernel& k) : p_(p), lp_(lp) {
    NodeId n = k.root;
    while (true) {
      region_.insert(n.v);
      if (p_.node(n).op != Op::Combine && p_.node(n).op != Op::Collect) break;
      n = p_.children(n)[0];
    }
    note(k.body, k);
  }

  std::vector<std::string> run(NodeId root, const std::string& root_name) {
    std::string text = term(root, true);
    lines_.push_back(root_name + " = " + text);
    return std::move(lines_);
  }

 private:
  void note(const Block& b, const Kernel& k) {
    for (const Item& it : b.items) {
      region_.insert(it.node.v);
      if (it.kind == Item::Kind::Loop) note(k.loops[size_t(it.index)].body, k);
      if (it.kind != Item::Kind::Load) continue;
      // The partition/replicate chain of a load; its source by name.
      const Load& ld = k.loads[size_t(it.index)];
      for (NodeId n = it.node; n != ld.source; n = p_.children(n)[0]) region_.insert(n.v);
      if (ld.buffer >= 0 && p_.node(ld.source).op != Op::Input) {
        Symbol name = p_.name_of(ld.source);
        std::string text = lp_.buffers[size_t(ld.buffer)].name;
        if (lp_.buffers[size_t(ld.buffer)].component >= 0) text = text.substr(0, text.rfind('_'));
        sources_[ld.source.v] = name.valid() ? std::string(name.str()) : text;
      }
    }
  }

  std::string term(NodeId n, bool top) {
    const Node& node = p_.node(n);
    Symbol name = p_.name_of(n);
    if (node.op == Op::Const) return number_text(attr_f64(node.attrs));
    const Type& t = p_.type(n).get();
    bool literal = !t.is_tuple && t.tensor().literal;  // folded where used: print it whole
    if (node.op == Op::Input) return std::string(attr_sym(node.attrs, 0).str());
    // An index, not a value of another kernel: every kernel computes it.
    if (node.op == Op::Iota) return "(iota " + std::string(attr_sym(node.attrs, 0).str()) + ")";
    if (auto it = sources_.find(n.v); it != sources_.end() && !top) return it->second;
    if (!top && name.valid()) {
      if (region_.count(n.v) && defined_.insert(n.v).second) {
        std::string text = term(n, true);
        lines_.push_back(std::string(name.str()) + " = " + text);
      }
      return std::string(name.str());
    }
    if (!top && !literal && !region_.count(n.v))
      return "<" + std::string(op_info(node.op).name) + " from another kernel>";
    const OpInfo& info = op_info(node.op);
    std::string out = "(";
    if (node.op == Op::Reduce && attr_red(node.attrs, 1) == RedId::add())
      out += "sum " + std::string(attr_sym(node.attrs, 0).str());
    else if (node.op == Op::Reduce && attr_red(node.attrs, 1) == RedId::max())
      out += "max " + std::string(attr_sym(node.attrs, 0).str());
    else {
      out += std::string(info.name);
      int slot = 0;
      for (AttrKind kind : info.attrs) {
        switch (kind) {
          case AttrKind::None:
            break;
          case AttrKind::Sym:
          case AttrKind::Dim:
            out += " " + std::string(attr_sym(node.attrs, slot).str());
            break;
          case AttrKind::Axis:
            out += " " + attr_axis(node.attrs, slot).name();
            break;
          case AttrKind::Red:
            out += " " + reduction_text(attr_red(node.attrs, slot));
            break;
          case AttrKind::DType:
            out += " " + std::string(dtype_name(attr_dtype(node.attrs, slot)));
            break;
          case AttrKind::Int:
            out += " " + std::to_string(node.attrs[size_t(slot)]);
            break;
          case AttrKind::F64:
            out += " " + number_text(attr_f64(node.attrs));
            ++slot;
            break;
        }
        if (kind != AttrKind::None) ++slot;
      }
    }
    for (NodeId c : p_.children(n)) out += " " + term(c, false);
    return out + ")";
  }

  const Program& p_;
  const LoweredProgram& lp_;
  std::map<uint32_t, std::string> sources_;  // buffers written by other kernels
  std::set<uint32_t> region_, defined_;
  std::vector<std::string> lines_;
};

}  // namespace

std::vector<std::string> region_text(const Program& p, const LoweredProgram& lp, const Kernel& k,
                                     const std::string& root_name) {
  return RegionPrinter(p, lp, k).run(k.root, root_name);
}

}  // namespace eqf::codegen
