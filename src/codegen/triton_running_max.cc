// Shifting by the running max (DESIGN §6, the online softmax). A loop whose
// state holds a max M and exp-sums over it computes, per block, the block's
// max m_b, terms like exp(x - m_b) and their sums and contractions, and
// merges both sides rescaled to max(M, m_b): two exponentials (alpha, beta)
// per row and the block's terms rescaled by beta. When every exp-sum term of
// the block is homogeneous of degree one in exp(-m_b) (a product of one
// exp(x - m_b) with factors that do not read m_b, summed or contracted), the
// same block computed against m_new = max(M, m_b) instead of m_b is exactly
// the block's terms times exp(m_b - m_new): the already-rescaled terms. The
// kernel then computes m_new before the terms and merges acc * exp(M - m_new)
// + block; beta, its guards and one multiply per element go. This file
// decides which max components allow it; triton_kernel.cc emits it.
#include <map>

#include "codegen/triton_emit.h"

namespace eqf::codegen {
namespace {

constexpr int kInvalid = -1;
constexpr int kTheMax = 2;  // the node m_b itself (only valid as exp(x - m_b))

// The degree of a node in exp(-m_b): 0 if it does not read m_b, 1 if it is
// exp(-m_b) times a factor that does not, kInvalid for anything else.
class Degree {
 public:
  Degree(const Program& p, NodeId max) : p_(p), max_(max) {}

  int of(NodeId n) {
    if (n == max_) return kTheMax;
    if (auto it = memo_.find(n.v); it != memo_.end()) return it->second;
    int d = compute(n);
    memo_.emplace(n.v, d);
    return d;
  }

 private:
  bool zero_literal(NodeId n) const {
    const Type& t = p_.type(n).get();
    return !t.is_tuple && t.tensor().literal && fold_literal(p_, n) == 0;
  }

  int compute(NodeId n) {
    const Node& node = p_.node(n);
    auto kids = p_.children(n);
    if (node.op == Op::Exp) {
      NodeId x = kids[0];
      if (p_.node(x).op == Op::Sub && p_.children(x)[1] == max_ && of(p_.children(x)[0]) == 0) return 1;
    }
    std::vector<int> d;
    bool reads = false;
    for (NodeId c : kids) {
      d.push_back(of(c));
      if (d.back() == kInvalid || d.back() == kTheMax) return kInvalid;
      reads |= d.back() != 0;
    }
    if (!reads) return 0;
    auto at_most_one = [](int x) { return x <= 1 ? x : kInvalid; };
    // Sides that must agree, where a literal 0 agrees with any degree.
    auto same = [&](size_t a, size_t b) {
      if (zero_literal(kids[a])) return d[b];
      if (zero_literal(kids[b])) return d[a];
      return d[a] == d[b] ? d[a] : kInvalid;
    };
    switch (node.op) {
      case Op::Mul:
      case Op::MatMul:
      case Op::TileMatMul:
        return at_most_one(d[0] + d[1]);
      case Op::Div:
        return d[1] == 0 ? d[0] : kInvalid;
      case Op::Neg:
      case Op::Cast:
      case Op::Replicate:
        return d[0];
      case Op::Reduce: {
        RedId red = attr_red(node.attrs, 1);
        return red.is_plain() && red.get().components[0].base == RedBase::Add ? d[0] : kInvalid;
      }
      case Op::Add:
      case Op::Sub:
        return same(0, 1);
      case Op::Where:
        return d[0] == 0 ? same(1, 2) : kInvalid;
      default:
        return kInvalid;
    }
  }

  const Program& p_;
  NodeId max_;
  std::map<uint32_t, int> memo_;
};

bool computed_in(const Block& b, NodeId n) {
  for (const Item& it : b.items)
    if (it.kind == Item::Kind::Compute && it.node == n) return true;
  return false;
}

}  // namespace

std::vector<size_t> KernelEmitter::running_max_components(int li) const {
  const Loop& loop = kernel_.loops[size_t(li)];
  std::vector<NodeId> parts = loop_parts(p_, loop);
  const size_t n = loop.accumulators.size();
  if (parts.size() != n) return {};
  std::vector<size_t> out;
  for (size_t j = 0; j < n; ++j) {
    const RedComponent& cj = loop.accumulators[j].red;
    if (cj.base != RedBase::Max || cj.repair != Repair::None || !computed_in(loop.body, parts[j])) continue;
    Degree degree(p_, parts[j]);
    bool used = false, ok = true;
    for (size_t i = 0; i < n && ok; ++i) {
      if (i == j) continue;
      const RedComponent& ci = loop.accumulators[i].red;
      bool over_j = ci.repair == Repair::ExpSum && ci.arg0 == j;
      if (!over_j && ci.repair != Repair::None && (ci.arg0 == j || ci.arg1 == j)) ok = false;
      int d = degree.of(parts[i]);
      ok = ok && d == (over_j ? 1 : 0);
      used |= over_j;
    }
    if (ok && used) out.push_back(j);
  }
  return out;
}

}  // namespace eqf::codegen
