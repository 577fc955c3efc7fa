// Tile values of emitted kernels: broadcasting by dim name, pointwise
// building blocks, masking of padded positions, constant folding.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "codegen/triton_emit.h"

namespace eqf::codegen {
std::string atom(const Expr& e) { return e.prec >= kAtom ? e.text : "(" + e.text + ")"; }

namespace {

std::string at_least(const Expr& e, int prec) { return e.prec >= prec ? e.text : "(" + e.text + ")"; }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool has_dim(const std::vector<DimView>& dims, Symbol d) {
  return std::any_of(dims.begin(), dims.end(), [&](const DimView& v) { return v.dim == d; });
}

DType arith_dtype(std::span<const Value* const> values) {
  for (const Value* v : values)
    if (!v->literal && v->dtype == DType::F64) return DType::F64;
  return DType::F32;
}

// v as an integer operand: an i32 tile as it is, a literal with an integral
// value as a Python int; nullopt for anything else.
std::optional<Value> as_integer(const Value& v) {
  if (!v.literal) return v.dtype == DType::I32 ? std::optional<Value>(v) : std::nullopt;
  const std::string& text = v.expr.text;
  char* end = nullptr;
  double x = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || x != std::floor(x) || std::fabs(x) >= 2147483648.0)
    return std::nullopt;
  Value out = v;
  out.expr = Expr{std::to_string(static_cast<long long>(x)), x < 0 ? kUnary : kAtom};
  out.dtype = DType::I32;
  return out;
}

}  // namespace

const std::string& ModuleNames::named(Kind kind, uint32_t a, uint32_t b, const std::string& hint) const {
  auto [it, fresh] = names_.try_emplace({kind, a, b});
  if (fresh) it->second = table_.fresh(hint);
  return it->second;
}

const std::string& ModuleNames::stride(int b, Symbol d) const {
  return named(Kind::Stride, uint32_t(b), d.raw(), "stride_" + buffer[size_t(b)] + "_" + py_ident(d.str()));
}
const std::string& ModuleNames::extent(Symbol d) const { return named(Kind::Extent, d.raw(), 0, py_upper(d.str())); }
const std::string& ModuleNames::block(Axis a) const {
  return named(Kind::Block, a.dim.raw(), a.level, "BLOCK_" + py_upper(a.name()));
}
const std::string& ModuleNames::count(Axis a) const {
  return named(Kind::Count, a.dim.raw(), a.level, "n_" + py_ident(a.name()));
}
const std::string& ModuleNames::block_param(Axis a) const {
  return named(Kind::BlockParam, a.dim.raw(), a.level, "block_" + py_ident(a.name()));
}
const std::string& ModuleNames::even(Axis a) const {
  return named(Kind::Even, a.dim.raw(), a.level, "EVEN_" + py_upper(a.name()));
}
const std::string& ModuleNames::grid_count(Axis a) const {
  return named(Kind::GridCount, a.dim.raw(), a.level, "GRID_" + py_upper(a.name()));
}
namespace {
const char* pad_suffix(TilePad pad) {
  switch (pad) {
    case TilePad::None:
      return "_PLAIN";
    case TilePad::GemvDot:
      return "_GEMV";
    case TilePad::Dot:
      return "_DOT";
  }
  return "";
}
}  // namespace

const std::string& ModuleNames::tile_alias(const DimView& v, TilePad pad) const {
  return named(Kind::TileAlias, v.dim.raw(), uint32_t(v.depth) * 4 + uint32_t(pad), tile(v) + pad_suffix(pad));
}
const std::string& ModuleNames::even_alias(Axis a, TilePad pad) const {
  return named(Kind::EvenAlias, a.dim.raw(), uint32_t(a.level) * 4 + uint32_t(pad), even(a) + pad_suffix(pad));
}
const std::string& ModuleNames::tile(const DimView& v) const {
  std::string hint = v.depth == 0 ? py_upper(v.dim.str()) : py_upper(Axis{v.dim, uint8_t(v.depth - 1)}.name());
  return named(Kind::Tile, v.dim.raw(), uint32_t(v.depth), "TILE_" + hint);
}

std::string dtype_triton(DType t) {
  switch (t) {
    case DType::F16:
      return "tl.float16";
    case DType::BF16:
      return "tl.bfloat16";
    case DType::F32:
      return "tl.float32";
    case DType::F64:
      return "tl.float64";
    case DType::I32:
      return "tl.int32";
    case DType::Bool:
      return "tl.int1";
  }
  return "tl.float32";
}

std::string convert_text(const Expr& e, DType from, DType to) {
  std::string text = atom(e);
  if ((from == DType::BF16) != (to == DType::BF16) && from != DType::F32 && to != DType::F32)
    text += ".to(tl.float32)";
  return text + ".to(" + dtype_triton(to) + ")";
}

std::string dtype_torch(DType t) {
  switch (t) {
    case DType::F16:
      return "torch.float16";
    case DType::BF16:
      return "torch.bfloat16";
    case DType::F32:
      return "torch.float32";
    case DType::F64:
      return "torch.float64";
    case DType::I32:
      return "torch.int32";
    case DType::Bool:
      return "torch.bool";
  }
  return "torch.float32";
}

// ---- KernelEmitter: values ---------------------------------------------------------

Value KernelEmitter::literal(double v) const {
  Value out;
  out.expr = Expr{py_float(v), v < 0 ? kUnary : kAtom};
  out.literal = true;
  out.zero_padded = v == 0;
  return out;
}

Value KernelEmitter::to_float(const Value& v) const {
  if (v.literal || v.dtype == DType::F32 || v.dtype == DType::F64) return v;
  Value out = v;
  out.expr = Expr{atom(v.expr) + ".to(tl.float32)", kAtom};
  out.dtype = DType::F32;
  return out;
}

std::vector<DimView> KernelEmitter::union_dims(std::span<const Value* const> values) const {
  std::vector<DimView> out;
  for (const Value* v : values)
    for (const DimView& d : v->dims)
      if (!has_dim(out, d.dim)) out.push_back(d);
  std::sort(out.begin(), out.end(),
            [&](const DimView& a, const DimView& b) { return p_.dims.order(a.dim) < p_.dims.order(b.dim); });
  return out;
}

Expr KernelEmitter::expand(const Value& v, const std::vector<DimView>& to) const {
  if (v.literal || v.dims.empty() || v.dims == to) return v.expr;
  std::string index;
  for (const DimView& d : to)
    index += std::string(index.empty() ? "" : ", ") + (has_dim(v.dims, d.dim) ? ":" : "None");
  for (const DimView& d : v.dims)
    if (!has_dim(to, d.dim))
      throw Error("codegen: internal error: cannot broadcast a tile with dim " + std::string(d.dim.str()) +
                  " to tiles without it");
  return Expr{atom(v.expr) + "[" + index + "]", kAtom};
}

Value KernelEmitter::binary(const Value& a0, std::string_view op, int prec, const Value& b0) const {
  // Sums and differences of i32 tiles (index arithmetic: iota differences in
  // masks) stay integer: exact, and no conversions per element.
  std::optional<Value> ia = as_integer(a0), ib = as_integer(b0);
  bool integer = (op == "+" || op == "-") && ia && ib && !(a0.literal && b0.literal);
  Value a = integer ? *ia : to_float(a0), b = integer ? *ib : to_float(b0);
  const Value* args[] = {&a, &b};
  Value out;
  out.dims = union_dims(args);
  out.dtype = integer ? DType::I32 : arith_dtype(args);
  std::string left = at_least(expand(a, out.dims), prec);
  std::string right = at_least(expand(b, out.dims), prec + 1);
  out.expr = Expr{left + " " + std::string(op) + " " + right, prec};
  return out;
}

Value KernelEmitter::compare(const Value& a0, std::string_view op, const Value& b0) const {
  // bf16 operands are compared in f32 (exact): Triton's CPU interpreter holds
  // bf16 as uint16 and would compare the bit patterns.
  auto operand = [&](const Value& v) { return v.dtype == DType::BF16 && !v.literal ? to_float(v) : v; };
  Value a = operand(a0), b = operand(b0);
  // An i32 tile against an integral literal: an integer comparison.
  if (!a0.literal && a0.dtype == DType::I32 && b0.literal)
    if (std::optional<Value> ib = as_integer(b0)) b = *ib;
  if (!b0.literal && b0.dtype == DType::I32 && a0.literal)
    if (std::optional<Value> ia = as_integer(a0)) a = *ia;
  const Value* args[] = {&a, &b};
  Value out;
  out.dims = union_dims(args);
  out.dtype = DType::Bool;
  // Both sides tighter than a comparison: Python would chain `a < b < c`.
  std::string left = at_least(expand(a, out.dims), kCmp + 1);
  std::string right = at_least(expand(b, out.dims), kCmp + 1);
  out.expr = Expr{left + " " + std::string(op) + " " + right, kCmp};
  return out;
}

Value KernelEmitter::call(std::string_view fn, std::span<const Value* const> args0, bool float_args) const {
  std::vector<Value> args;
  for (const Value* a : args0) args.push_back(float_args ? to_float(*a) : *a);
  std::vector<const Value*> ptrs;
  for (const Value& a : args) ptrs.push_back(&a);
  Value out;
  out.dims = union_dims(ptrs);
  out.dtype = arith_dtype(ptrs);
  std::string text = std::string(fn) + "(";
  for (size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + expand(args[i], out.dims).text;
  out.expr = Expr{text + ")", kAtom};
  return out;
}

Value KernelEmitter::where(const Value& c, const Value& a0, const Value& b0) const {
  Value a = to_float(a0), b = to_float(b0);
  const Value* args[] = {&c, &a, &b};
  Value out;
  out.dims = union_dims(args);
  const Value* branches[] = {&a, &b};
  out.dtype = arith_dtype(branches);
  // A numeric condition selects where it is nonzero (as the interpreter does).
  std::string cond = expand(c, out.dims).text;
  if (c.dtype != DType::Bool && !c.literal) cond = expand(compare(c, "!=", literal(0)), out.dims).text;
  out.expr = Expr{"tl.where(" + cond + ", " + expand(a, out.dims).text + ", " +
                      expand(b, out.dims).text + ")",
                  kAtom};
  return out;
}

DimView KernelEmitter::view_of(NodeId n, Symbol d) const {
  for (const DimView& v : all_views(p_.type(n).get().parts.front()))
    if (v.dim == d) return v;
  return DimView{d, 0, true};
}

Value KernelEmitter::masked(const Value& v, const DimView& d, double identity) {
  if (!d.squeezed && !has_dim(v.dims, d.dim)) return v;
  if (identity == 0 && v.zero_padded) return v;
  const Index& ix = index(d);
  if (ix.mask.empty()) return v;
  Value mask;
  mask.expr = Expr{ix.mask, kAtom};
  if (!ix.scalar) mask.dims = {d};
  mask.dtype = DType::Bool;
  Value out = where(mask, v, literal(identity));
  out.dims = v.dims;  // the mask's dim is v's own
  out.zero_padded = false;
  return out;
}

Value KernelEmitter::bind(const Value& v, std::string_view hint) {
  if (v.literal || is_identifier(v.expr.text)) return v;
  Value out = v;
  std::string name = locals_.fresh(hint);
  stmt(name + " = " + v.expr.text);
  out.expr = Expr{name, kAtom};
  return out;
}

Value KernelEmitter::reduce_dim(const Value& v, const DimView& d, RedBase base) {
  bool plus = base == RedBase::Add;
  double identity = plus ? 0.0 : -std::numeric_limits<double>::infinity();
  auto it = std::find_if(v.dims.begin(), v.dims.end(), [&](const DimView& x) { return x.dim == d.dim; });
  if (it == v.dims.end()) return masked(v, d, identity);  // squeezed: a block of one element
  Value x = masked(to_float(v), d, identity);
  Value out;
  out.dims = v.dims;
  out.dims.erase(out.dims.begin() + (it - v.dims.begin()));
  out.dtype = x.dtype;
  out.zero_padded = v.zero_padded;
  out.expr = Expr{std::string(plus ? "tl.sum(" : "tl.max(") + x.expr.text +
                      ", axis=" + std::to_string(it - v.dims.begin()) + ")",
                  kAtom};
  return out;
}

}  // namespace eqf::codegen
