#include "eqiforge/ir/op.h"

namespace eqf {
namespace {

struct AttrSig {
  AttrKind kinds[3];
};

constexpr AttrSig make_sig() { return {{AttrKind::None, AttrKind::None, AttrKind::None}}; }
constexpr AttrSig make_sig(AttrKind a) { return {{a, AttrKind::None, AttrKind::None}}; }
constexpr AttrSig make_sig(AttrKind a, AttrKind b) { return {{a, b, AttrKind::None}}; }
constexpr AttrSig make_sig(AttrKind a, AttrKind b, AttrKind c) { return {{a, b, c}}; }

constexpr int slots(const AttrSig& s) {
  int n = 0;
  for (AttrKind k : s.kinds) n += k == AttrKind::None ? 0 : k == AttrKind::F64 ? 2 : 1;
  return n;
}

#define EQF_ATTRS(...) __VA_ARGS__
#define Sym AttrKind::Sym
#define Dim AttrKind::Dim
#define Axis AttrKind::Axis
#define Red AttrKind::Red
#define DType AttrKind::DType
#define Int AttrKind::Int
#define F64 AttrKind::F64
constexpr AttrSig kSigs[] = {
#define EQF_OP(Enum, text, arity, attrs, props) make_sig(attrs),
#include "eqiforge/ir/ops.def"
#undef EQF_OP
};
#undef Sym
#undef Dim
#undef Axis
#undef Red
#undef DType
#undef Int
#undef F64

const OpInfo* build_table() {
  static OpInfo table[kNumOps];
  int i = 0;
#define EQF_OP(Enum, text, arity, attrs, props)                                              \
  table[i] = OpInfo{text, arity, {kSigs[i].kinds[0], kSigs[i].kinds[1], kSigs[i].kinds[2]}, \
                    slots(kSigs[i]), props};                                               \
  ++i;
#include "eqiforge/ir/ops.def"
#undef EQF_OP
  return table;
}

const OpInfo* table() {
  static const OpInfo* t = build_table();
  return t;
}

}  // namespace

const OpInfo& op_info(Op op) { return table()[static_cast<int>(op)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i)
    if (table()[i].name == name) return static_cast<Op>(i);
  return std::nullopt;
}

}  // namespace eqf
