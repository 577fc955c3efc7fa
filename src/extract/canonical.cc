#include "eqiforge/extract/canonical.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "extract/hash_mix.h"

namespace eqf {
namespace {

using extract::mix;

uint64_t attrs_hash(Op op, const Attrs& a) { return mix(mix(mix(mix(7, uint64_t(op)), a[0]), a[1]), a[2]); }

// The value of a literal-typed subterm (a constant expression), as the
// e-graph's analysis folds it; extraction writes such a class as its
// `const`, so ≈ compares constants by value.
std::optional<double> literal_value(const Program& p, NodeId n) {
  const Node& node = p.node(n);
  if (node.op == Op::Const) return attr_f64(node.attrs);
  const Type& t = p.type(n).get();
  if (t.is_tuple || !t.tensor().literal || !op_has(node.op, kPointwise)) return std::nullopt;
  double v[2] = {0, 0};
  auto kids = p.children(n);
  if (kids.size() > 2) return std::nullopt;
  for (size_t i = 0; i < kids.size(); ++i) {
    std::optional<double> k = literal_value(p, kids[i]);
    if (!k) return std::nullopt;
    v[i] = *k;
  }
  switch (node.op) {
    case Op::Add: return v[0] + v[1];
    case Op::Sub: return v[0] - v[1];
    case Op::Mul: return v[0] * v[1];
    case Op::Div: return v[0] / v[1];
    case Op::Max2: return std::fmax(v[0], v[1]);
    case Op::Min2: return std::fmin(v[0], v[1]);
    case Op::Neg: return -v[0];
    case Op::Exp: return std::exp(v[0]);
    case Op::Log: return std::log(v[0]);
    case Op::Sqrt: return std::sqrt(v[0]);
    case Op::Rsqrt: return 1.0 / std::sqrt(v[0]);
    case Op::Sigmoid: return 1.0 / (1.0 + std::exp(-v[0]));
    case Op::Silu: return v[0] / (1.0 + std::exp(-v[0]));
    case Op::Gelu: return 0.5 * v[0] * (1.0 + std::erf(v[0] / std::sqrt(2.0)));
    case Op::Tanh: return std::tanh(v[0]);
    case Op::Pow: return std::pow(v[0], attr_f64(node.attrs));
    default: return std::nullopt;
  }
}

class Hasher {
 public:
  explicit Hasher(const Program& p) : p_(p), memo_(p.size(), 0), done_(p.size(), false) {}

  uint64_t node(NodeId n) {
    if (done_[n.v]) return memo_[n.v];
    const Node& node = p_.node(n);
    uint64_t h;
    if (std::optional<double> c = literal_value(p_, n)) {
      h = attrs_hash(Op::Const, attrs_f64(*c));
    } else if (node.op == Op::Combine) {
      // A run of combines: the set of grid axes, then the body.
      std::vector<uint64_t> axes;
      NodeId b = n;
      while (p_.node(b).op == Op::Combine) {
        axes.push_back(attrs_hash(Op::Combine, p_.node(b).attrs));
        b = p_.children(b)[0];
      }
      std::sort(axes.begin(), axes.end());
      h = 11;
      for (uint64_t a : axes) h = mix(h, a);
      h = mix(h, node_of(b));
    } else if (node.op == Op::Partition || node.op == Op::Replicate) {
      // A run of partition/replicate wrappers: each adds its own axis, so
      // their order does not change the load.
      std::vector<uint64_t> wrappers;
      NodeId b = n;
      while (p_.node(b).op == Op::Partition || p_.node(b).op == Op::Replicate) {
        wrappers.push_back(attrs_hash(p_.node(b).op, p_.node(b).attrs));
        b = p_.children(b)[0];
      }
      std::sort(wrappers.begin(), wrappers.end());
      h = 13;
      for (uint64_t w : wrappers) h = mix(h, w);
      h = mix(h, node_of(b));
    } else {
      h = attrs_hash(node.op, node.attrs);
      std::vector<uint64_t> kids;
      for (NodeId c : p_.children(n)) kids.push_back(node_of(c));
      if (op_has(node.op, kCommutative) || op_has(node.op, kContraction)) std::sort(kids.begin(), kids.end());
      for (uint64_t k : kids) h = mix(h, k);
    }
    memo_[n.v] = h;
    done_[n.v] = true;
    return h;
  }

 private:
  uint64_t node_of(NodeId n) { return node(n); }
  const Program& p_;
  std::vector<uint64_t> memo_;
  std::vector<bool> done_;
};

}  // namespace

uint64_t canonical_hash(const Program& p) {
  Hasher hasher(p);
  uint64_t h = 17;
  for (const OutputDecl& o : p.outputs()) {
    h = mix(h, o.name.raw());
    for (Symbol d : o.layout) h = mix(h, d.raw());
    h = mix(h, hasher.node(o.value));
  }
  return h;
}

}  // namespace eqf
