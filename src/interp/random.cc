// Random inputs and block sizes for the interpreter's tests and the CLI.
//
// Both are deterministic across platforms: std::mt19937_64's output sequence
// is fixed by the standard, and every number is derived from its raw 64-bit
// outputs here (the standard distributions are implementation-defined).
#include <algorithm>
#include <optional>
#include <random>
#include <string>

#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/diagnostic.h"

namespace eqf {
namespace {

// A double in [0, 1) from the top 53 bits of one output.
double unit(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

// An integer in [lo, hi]; the modulo bias (< 2^-50 here) is irrelevant for tests.
int64_t between(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + int64_t(rng() % uint64_t(hi - lo + 1));
}

// A block size for an axis that splits `size` elements. Ragged blocks (not
// dividing the size) are the common case, since they are where masking bugs
// live; powers of two and the whole size still come up.
int64_t draw_block(std::mt19937_64& rng, int64_t size) {
  if (size <= 1) return 1;
  const uint64_t kind = rng() % 8;
  if (kind < 2) {
    int e = 0;
    while ((int64_t(2) << e) <= size) ++e;
    return int64_t(1) << between(rng, 0, e);
  }
  if (kind == 2) return between(rng, 1, size);
  // A ragged size: try a few random candidates rather than listing every
  // size (the extent may be huge); a size with no ragged block at all (2, 3,
  // 4, 6) falls back to any size.
  if (size > 2)
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int64_t b = between(rng, 2, size - 1);
      if (size % b != 0) return b;
    }
  return between(rng, 1, size);
}

// What axis a splits under the block sizes chosen so far (extent(d) at
// level 0, the outer block below), or nullopt while that is unknown.
std::optional<int64_t> split_size(const Program& p, const BlockSizes& chosen, Axis a);

// A dim's extent; a collected dim has its axis's coordinate count.
std::optional<int64_t> dim_extent(const Program& p, const BlockSizes& chosen, Symbol d) {
  const DimInfo* info = p.dims.find(d);
  if (!info) throw Error(p.file, {}, "dim " + std::string(d.str()) + " is not declared");
  if (!info->collected_from) return info->extent;
  const auto b = chosen.find(*info->collected_from);
  const auto size = split_size(p, chosen, *info->collected_from);
  if (b == chosen.end() || !size) return std::nullopt;
  return (*size + b->second - 1) / b->second;
}

std::optional<int64_t> split_size(const Program& p, const BlockSizes& chosen, Axis a) {
  if (a.level == 0) return dim_extent(p, chosen, a.dim);
  const auto outer = chosen.find(Axis{a.dim, uint8_t(a.level - 1)});
  if (outer == chosen.end()) return std::nullopt;
  return outer->second;
}

}  // namespace

BlockSizes random_block_sizes(const Program& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  BlockSizes out;
  // axes_of lists dims in declaration order and outer levels first, so what
  // an axis splits is usually known when its turn comes; a collected dim
  // whose axis comes later is sized in a further pass.
  std::vector<Axis> pending = axes_of(p);
  while (!pending.empty()) {
    std::vector<Axis> later;
    for (Axis a : pending) {
      if (const auto size = split_size(p, out, a))
        out[a] = draw_block(rng, *size);
      else
        later.push_back(a);
    }
    if (later.size() == pending.size())
      throw Error(p.file, {},
                  "cannot choose a block size for axis " + later.front().name() +
                      ": what it splits depends on an axis the program does not use");
    pending = std::move(later);
  }
  return out;
}

std::vector<Tensor64> random_inputs(const Program& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor64> out;
  for (const InputDecl& d : p.inputs()) {
    Tensor64 t;
    t.dims = d.layout;
    int64_t n = 1;
    for (Symbol dim : d.layout) {
      const DimInfo* info = p.dims.find(dim);
      if (!info || info->collected_from)
        throw Error(p.file, d.loc,
                    "input " + std::string(d.name.str()) + ": dim " + std::string(dim.str()) +
                        " has no fixed extent");
      t.shape.push_back(info->extent);
      // The interpreter's own limit (2^28 doubles): refuse before allocating.
      if (__builtin_mul_overflow(n, info->extent, &n) || n > (int64_t(1) << 28))
        throw Error(p.file, d.loc,
                    "input " + std::string(d.name.str()) + " has more than 2^28 elements; the reference "
                    "interpreter evaluates programs at test sizes (re-size the dims)");
    }
    t.data.resize(size_t(n));
    for (double& v : t.data) {
      switch (d.dtype) {
        case DType::Bool:
          v = double(rng() >> 63);
          break;
        case DType::I32:
          v = double(between(rng, -5, 5));
          break;
        default:
          v = 2.0 * unit(rng) - 1.0;
          break;
      }
    }
    // Never all zero: an all-zero input hides most wrong programs.
    if (!t.data.empty() && std::all_of(t.data.begin(), t.data.end(), [](double v) { return v == 0; }))
      t.data.front() = 1;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace eqf
