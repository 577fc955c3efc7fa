// Element types. The interpreter computes in float64 whatever the dtype;
// dtypes matter for typing (operands must agree), memory traffic and codegen.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace eqf {

enum class DType : uint8_t { F16, BF16, F32, F64, I32, Bool };

std::string_view dtype_name(DType t);                       // "f16", ...
std::optional<DType> parse_dtype(std::string_view text);    // nullopt if unknown
int dtype_bytes(DType t);
bool dtype_is_float(DType t);

}  // namespace eqf
