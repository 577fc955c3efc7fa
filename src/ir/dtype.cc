#include "eqiforge/ir/dtype.h"

namespace eqf {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int bytes;
  bool is_float;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F16, "f16", 2, true},  {DType::BF16, "bf16", 2, true}, {DType::F32, "f32", 4, true},
    {DType::F64, "f64", 8, true},  {DType::I32, "i32", 4, false},  {DType::Bool, "bool", 1, false},
};

const DTypeInfo& info(DType t) { return kDTypes[static_cast<int>(t)]; }

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
int dtype_bytes(DType t) { return info(t).bytes; }
bool dtype_is_float(DType t) { return info(t).is_float; }

std::optional<DType> parse_dtype(std::string_view text) {
  for (const DTypeInfo& d : kDTypes)
    if (d.name == text) return d.type;
  return std::nullopt;
}

}  // namespace eqf
