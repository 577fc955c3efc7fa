// Typing of layout ops (docs/ir.md, "Layout"): split, merge and rename change
// dim names, never values, so they check extents through the dim table and
// leave the parallel states alone. A dim that an axis partitions must stay
// whole: its blocks are defined by the dim's extent.
#include "ir/typing_rules.h"

namespace eqf::typing {
namespace {

// The fixed extent of d, or an error: undeclared dims and dims made by collect
// (whose extent is the number of coordinates of an axis) have none.
std::optional<int64_t> fixed_extent(Symbol d, const DimTable& dims, std::string& err) {
  const DimInfo* info = dims.find(d);
  if (!info) {
    err = "dim " + str(d) + " is not declared; expected a dim of the program's (dims ...)";
    return std::nullopt;
  }
  if (info->collected_from) {
    err = "dim " + str(d) + " is made by collect and has no fixed extent (the number of coordinates of " +
          info->collected_from->name() + "); it cannot be split, merged or renamed";
    return std::nullopt;
  }
  return info->extent;
}

// Checks that X has d, whole (no axis partitions it).
std::optional<std::string> check_whole(const TensorType& x, Symbol d, const DimTable& dims) {
  if (x.literal || !x.has_dim(d))
    return "the operand has no dim " + str(d) + "; expected a tensor with dim " + str(d) + ", got " +
           tensor_text(x, dims);
  for (const AxisState& a : x.delta)
    if (is_blocked(a.state) && a.state.dim == d)
      return "dim " + str(d) + " is partitioned by axis " + a.axis.name() + " (" + state_text(a.state) +
             "); expected it whole: combine " + a.axis.name() + " first";
  return std::nullopt;
}

std::optional<std::string> check_fresh(const TensorType& x, Symbol d, const DimTable& dims) {
  if (x.has_dim(d))
    return "the operand already has dim " + str(d) + " (" + tensor_text(x, dims) +
           "); expected a new dim name";
  return std::nullopt;
}

}  // namespace

Result type_layout(Op op, const Attrs& attrs, Kids kids, DimTable& dims) {
  const TensorType& x = kids[0]->tensor();
  Symbol a0 = attr_sym(attrs, 0), a1 = attr_sym(attrs, 1), a2 = attr_sym(attrs, 2);
  // The dims that leave and those that arrive, with the extent law between them.
  Symbol gone[2], made[2];
  int n_gone = 0, n_made = 0;
  switch (op) {
    case Op::Split:  // d -> d_outer d_inner
      gone[n_gone++] = a0, made[n_made++] = a1, made[n_made++] = a2;
      break;
    case Op::Merge:  // d_outer d_inner -> d
      gone[n_gone++] = a0, gone[n_gone++] = a1, made[n_made++] = a2;
      break;
    case Op::Rename:  // d -> d'
      gone[n_gone++] = a0, made[n_made++] = a1;
      break;
    default:
      return fail(op, "not a layout op");
  }
  if (n_gone == 2 && gone[0] == gone[1])
    return fail(op, "merges dim " + str(gone[0]) + " with itself; expected two dims");
  if (n_made == 2 && made[0] == made[1])
    return fail(op, "splits into dim " + str(made[0]) + " twice; expected two new dims");
  for (int i = 0; i < n_gone; ++i)
    if (auto e = check_whole(x, gone[i], dims)) return fail(op, *e);
  for (int i = 0; i < n_made; ++i)
    if (auto e = check_fresh(x, made[i], dims)) return fail(op, *e);

  std::string err;
  int64_t gone_extent = 1, made_extent = 1;
  bool overflow = false;  // a product past int64 matches no declared extent
  for (int i = 0; i < n_gone; ++i) {
    std::optional<int64_t> e = fixed_extent(gone[i], dims, err);
    if (!e) return fail(op, err);
    overflow |= __builtin_mul_overflow(gone_extent, *e, &gone_extent);
  }
  for (int i = 0; i < n_made; ++i) {
    std::optional<int64_t> e = fixed_extent(made[i], dims, err);
    if (!e) return fail(op, err);
    overflow |= __builtin_mul_overflow(made_extent, *e, &made_extent);
  }
  if (overflow || gone_extent != made_extent) {
    auto product = [&](const Symbol* ds, int n) {
      std::string s;
      for (int i = 0; i < n; ++i)
        s += (i ? " * " : "") + str(ds[i]) + " (" + std::to_string(dims.find(ds[i])->extent) + ")";
      return s;
    };
    return fail(op, "extents do not match: " + product(gone, n_gone) + " = " + std::to_string(gone_extent) +
                        " but " + product(made, n_made) + " = " + std::to_string(made_extent) +
                        "; expected equal extents");
  }

  TensorType out = x;
  for (int i = 0; i < n_gone; ++i) erase_dim(out.dims, gone[i]);
  for (int i = 0; i < n_made; ++i) insert_dim(out.dims, made[i]);
  return make(std::move(out));
}

}  // namespace eqf::typing
