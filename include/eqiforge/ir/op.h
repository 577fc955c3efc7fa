// The operator enum and its static properties, generated from ops.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace eqf {

// What an attribute slot holds (see ops.def).
enum class AttrKind : uint8_t {
  None,
  Sym,    // an input name (Symbol)
  Dim,    // a dim name (Symbol)
  Axis,   // a parallel axis (Axis::pack)
  Red,    // a reduction (RedId)
  DType,  // an element type (DType)
  Int,    // a small non-negative integer (proj index)
  F64,    // a double in two slots
};

// Properties rule families derive rules from.
enum OpProp : uint32_t {
  kLeaf = 1u << 0,
  kPointwise = 1u << 1,
  kCommutative = 1u << 2,
  kAssociative = 1u << 3,
  kLinear = 1u << 4,     // preserves partial(+) in every operand (add, sub, neg)
  kPredicate = 1u << 5,  // result is bool
  kReduction = 1u << 6,
  kContraction = 1u << 7,
  kLayout = 1u << 8,
  kParallel = 1u << 9,
  kStorage = 1u << 10,
  kTupleOp = 1u << 11,
};

inline constexpr int kVariadic = -1;

enum class Op : uint8_t {
#define EQF_OP(Enum, text, arity, attrs, props) Enum,
#include "eqiforge/ir/ops.def"
#undef EQF_OP
};

inline constexpr int kNumOps = 0
#define EQF_OP(Enum, text, arity, attrs, props) +1
#include "eqiforge/ir/ops.def"
#undef EQF_OP
    ;

struct OpInfo {
  std::string_view name;
  int arity;               // kVariadic for tuple
  AttrKind attrs[3];       // attribute signature, None-padded
  int num_attr_slots;      // slots used in Node::attrs (F64 takes two)
  uint32_t props;          // OpProp bits
};

const OpInfo& op_info(Op op);
std::optional<Op> parse_op(std::string_view name);  // exact table names only
inline bool op_has(Op op, OpProp p) { return (op_info(op).props & p) != 0; }

}  // namespace eqf
