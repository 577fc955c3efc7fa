// Periods of a linear order of operators (see period.h).
#include "partition/period.h"

#include <algorithm>

#include "eqiforge/ir/op.h"
#include "extract/hash_mix.h"

namespace eqf::partition {
namespace {

using extract::mix;

constexpr uint32_t kNone = 0xffffffffu;

// A value's dtype and extents (dims are sorted by name, which differs
// between layers, so the extents are sorted).
uint64_t type_signature(const Program& p, NodeId id) {
  if (p.types().size() != p.size()) return 0;
  const Type& t = p.type(id).get();
  uint64_t h = mix(0x9e3779b97f4a7c15ull, t.is_tuple ? 1 : 0);
  std::vector<int64_t> extents;
  for (const TensorType& part : t.parts) {
    h = mix(h, uint64_t(part.dtype));
    extents.clear();
    for (Symbol d : part.dims) {
      const DimInfo* info = p.dims.find(d);
      extents.push_back(info ? info->extent : -1);
    }
    std::sort(extents.begin(), extents.end());
    for (int64_t e : extents) h = mix(h, uint64_t(e));
  }
  return h;
}

// The node alone: operator, attributes (dims as extents, input names
// dropped: the layers' weights are different inputs of one type), type.
uint64_t node_signature(const Program& p, NodeId id) {
  const Node& n = p.node(id);
  const OpInfo& info = op_info(n.op);
  uint64_t h = mix(type_signature(p, id), uint64_t(n.op));
  int slot = 0;
  for (AttrKind kind : info.attrs) {
    if (kind == AttrKind::None) break;
    uint64_t word = n.attrs[size_t(slot)];
    if (kind == AttrKind::Sym) word = 0;
    if (kind == AttrKind::Dim) {
      const DimInfo* d = p.dims.find(attr_sym(n.attrs, slot));
      word = d ? uint64_t(d->extent) : 0;
    }
    h = mix(h, word);
    if (kind == AttrKind::F64) h = mix(h, n.attrs[size_t(slot) + 1]);
    slot += kind == AttrKind::F64 ? 2 : 1;
  }
  return h;
}

}  // namespace

Period find_period(const std::vector<uint64_t>& sig) {
  size_t n = sig.size();
  Period best;
  size_t best_cover = 0;
  for (size_t period = 1; period <= n / 2; ++period) {
    // The longest run of positions i with sig[i] == sig[i + period]: the
    // block [start, start + run + period) repeats with this period.
    size_t run = 0, run_start = 0;
    size_t longest = 0, longest_start = 0;
    for (size_t i = 0; i + period < n; ++i) {
      if (sig[i] == sig[i + period]) {
        if (run == 0) run_start = i;
        if (++run > longest) longest = run, longest_start = run_start;
      } else {
        run = 0;
      }
    }
    size_t repeats = (longest + period) / period;
    size_t cover = repeats * period;
    if (repeats >= 2 && cover > best_cover) {
      best_cover = cover;
      best = Period{longest_start, period, repeats};
    }
  }
  return best;
}

SegmentKeys::SegmentKeys(const Program& p, const std::vector<uint32_t>& order, const std::vector<bool>& is_op,
                         const std::vector<bool>& is_output)
    : node_(order.size()), type_(order.size()), first_operand_(order.size() + 1, 0), last_use_(order.size(), 0),
      output_(order.size(), false), stamp_(p.size(), kNone), number_(p.size(), 0) {
  std::vector<uint32_t> pos(p.size(), kNone);
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = uint32_t(i);
  for (size_t i = 0; i < order.size(); ++i) {
    NodeId id{order[i]};
    node_[i] = node_signature(p, id);
    type_[i] = type_signature(p, id);
    output_[i] = is_output[order[i]];
    first_operand_[i] = uint32_t(operands_.size());
    for (NodeId c : p.children(id)) {
      bool op = is_op[c.v] && pos[c.v] != kNone;
      // An input is an operand from outside as a computed one is: both
      // become inputs of the subgraph. Other leaves are copied into it.
      bool input = p.node(c).op == Op::Input;
      operands_.push_back(Operand{c.v, op ? pos[c.v] : kNone, op || input ? type_signature(p, c) : node_signature(p, c),
                                  input});
      if (op) last_use_[pos[c.v]] = std::max(last_use_[pos[c.v]], uint32_t(i));
    }
  }
  first_operand_[order.size()] = uint32_t(operands_.size());
}

uint64_t SegmentKeys::key(size_t a, size_t b) {
  ++generation_;
  uint32_t next = 0;
  uint64_t h = mix(0x243f6a8885a308d3ull, uint64_t(b - a));
  for (size_t i = a; i < b; ++i) {
    h = mix(h, node_[i]);
    h = mix(h, last_use_[i] >= b || output_[i] ? 1 : 0);  // an output of the subgraph
    for (uint32_t k = first_operand_[i]; k < first_operand_[i + 1]; ++k) {
      const Operand& o = operands_[k];
      if (o.pos != kNone && o.pos >= a) {
        h = mix(h, 0x5bd1e995ull + (i - o.pos));
      } else if (o.pos != kNone || o.input) {  // an input of the subgraph, numbered by first use
        if (stamp_[o.node] != generation_) stamp_[o.node] = generation_, number_[o.node] = next++;
        h = mix(mix(h, 0x85ebca6bull + number_[o.node]), o.sig);
      } else {
        h = mix(h, o.sig);
      }
    }
  }
  return h;
}

std::vector<uint64_t> SegmentKeys::signatures() const {
  std::vector<uint64_t> sig(node_.size());
  for (size_t i = 0; i < node_.size(); ++i) {
    uint64_t h = node_[i];
    for (uint32_t k = first_operand_[i]; k < first_operand_[i + 1]; ++k) {
      const Operand& o = operands_[k];
      h = o.pos != kNone ? mix(h, 0x5bd1e995ull + (i - o.pos)) : mix(h, o.sig);  // distance back, or the leaf
    }
    sig[i] = h;
  }
  return sig;
}

size_t SegmentKeys::distinct(const std::vector<size_t>& cuts) {
  std::vector<uint64_t> keys;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) keys.push_back(key(cuts[s], cuts[s + 1]));
  std::sort(keys.begin(), keys.end());
  return size_t(std::unique(keys.begin(), keys.end()) - keys.begin());
}

}  // namespace eqf::partition
