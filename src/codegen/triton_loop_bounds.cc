// Loop bounds from index masks (DESIGN §6): a loop over key blocks whose
// every accumulator reads `where(pred, X, c)`, with pred comparing iota
// indices (causal `t <= s`, a sliding window `s - t < W`), visits only the
// blocks where pred can hold for some position of the program's tile. The
// analysis of the mask is the cost model's (cost/index_mask.h); this file
// adds the two things code generation needs on top of it:
//   - a proof that skipping is exact: with pred false on a whole block, the
//     block's contribution to every accumulator is the reduction's identity
//     (a constant evaluation of the loop body with the where replaced by c);
//   - the bounds as expressions of the program ids and block sizes, which
//     stay correct for ragged blocks (a superset of the blocks that matter:
//     blocks the bounds keep still apply the mask).
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "codegen/triton_emit.h"
#include "cost/index_mask.h"

namespace eqf::codegen {
namespace {

// Whether a block on which `where` takes its literal branch everywhere adds
// nothing to the loop's state: each component is its reduction's identity,
// or (exp-sum) its max component is -inf, which the merge counts as empty.
bool skipping_is_exact(const Program& p, const Loop& loop, NodeId where, int literal_child) {
  std::vector<NodeId> parts = loop_parts(p, loop);
  if (parts.size() != loop.accumulators.size()) return false;
  cost::BlockConstants block(p, where, literal_child);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < parts.size(); ++i) {
    const RedComponent& c = loop.accumulators[i].red;
    std::optional<double> v;
    switch (c.repair) {
      case Repair::None:
        v = block.eval(parts[i]);
        if (!v || *v != (c.base == RedBase::Max ? neg_inf : 0.0)) return false;
        break;
      case Repair::ExpSum:
        if (c.arg0 >= parts.size() || loop.accumulators[c.arg0].red.base != RedBase::Max) return false;
        v = block.eval(parts[c.arg0]);
        if (!v || *v != neg_inf) return false;
        break;
      default:  // Welford merges weigh by counts: not proved here
        return false;
    }
  }
  return true;
}

bool is_small_integer(double x) { return std::abs(x - std::round(x)) < 1e-9 && std::abs(x) < 1e9; }

// An integer linear form over non-negative quantities (Python expressions).
struct Sum {
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t constant = 0;

  void add(const std::string& q, int64_t c) {
    if (c == 0) return;
    for (auto& [name, k] : terms)
      if (name == q) {
        k += c;
        return;
      }
    terms.push_back({q, c});
  }
  void add(const Sum& o, int64_t scale) {
    for (const auto& [q, c] : o.terms) add(q, c * scale);
    constant += o.constant * scale;
  }
  bool is_constant() const {
    for (const auto& [q, c] : terms)
      if (c != 0) return false;
    return true;
  }
  bool nonnegative() const {
    for (const auto& [q, c] : terms)
      if (c < 0) return false;
    return constant >= 0;
  }
  std::string text() const {
    std::string out;
    for (const auto& [q, c] : terms) {
      if (c == 0) continue;
      int64_t m = c < 0 ? -c : c;
      std::string term = m == 1 ? q : std::to_string(m) + " * " + q;
      if (out.empty())
        out = c < 0 ? "-" + term : term;
      else
        out += (c < 0 ? " - " : " + ") + term;
    }
    if (out.empty()) return std::to_string(constant);
    if (constant != 0) out += (constant < 0 ? " - " : " + ") + std::to_string(constant < 0 ? -constant : constant);
    return out;
  }
};

std::string clamp0(const Sum& s) { return s.nonnegative() ? s.text() : "tl.maximum(" + s.text() + ", 0)"; }

// The first and last row of the block at coordinate `coord` of an axis with
// block size `block` over a dim of `extent` rows (the last block ragged).
void block_rows(const std::string& coord, const std::string& block, const std::string& extent, Sum& lo, Sum& hi) {
  if (block == "1") {
    lo.add(coord, 1);
    hi.add(coord, 1);
    return;
  }
  lo.add(coord + " * " + block, 1);
  hi.add("tl.minimum((" + coord + " + 1) * " + block + ", " + extent + ")", 1);
  hi.constant = -1;
}

// The least and the greatest value over a program's tile of `sign` times
// the terms of `pr` on the program's block and on whole dims: role `blocked`
// over the block's rows s_lo..s_hi, role 2 over 0..extent-1. The constant,
// and the loop's terms (role 0 when `blocked` is 1), are the caller's.
void form_range(const cost::IndexPredicate& pr, int64_t sign, int blocked, const Sum& s_lo, const Sum& s_hi, Sum& lo,
                Sum& hi) {
  for (const cost::IndexPredicate::Term& t : pr.terms) {
    const int64_t c = sign * int64_t(std::llround(t.coef));
    if (t.role == blocked) {
      lo.add(c > 0 ? s_lo : s_hi, c);
      hi.add(c > 0 ? s_hi : s_lo, c);
    } else if (t.role == 2) {
      (c < 0 ? lo : hi).constant += c * (t.extent - 1);
    }
  }
}

}  // namespace

std::optional<KernelEmitter::LoopRange> KernelEmitter::masked_range(int li, const std::string& count,
                                                                    const std::string& step) {
  const Loop& loop = kernel_.loops[size_t(li)];
  std::optional<cost::LoopMaskTerms> mask = cost::find_loop_mask_terms(p_, kernel_, li);
  if (!mask) return std::nullopt;

  // The grid coordinate's rows: first s_lo, last s_hi (ragged last block).
  Sum s_lo, s_hi;
  if (mask->grid_axis) {
    const Coord c = coord(*mask->grid_axis);
    block_rows(c.expr, c.block, extent(mask->grid_axis->dim), s_lo, s_hi);
  }

  std::vector<std::string> lows, highs;
  std::map<uint32_t, bool> exact;  // where node -> skipping its blocks is exact
  // Blocks on which a where's every conjunct holds at every position: where
  // node -> the bounds its conjuncts give; a where with a conjunct of another
  // form is left out (its mask stays on every block).
  struct Full {
    std::vector<std::string> lows, highs;
    int literal_child = 2;
    bool ok = true;
  };
  std::map<uint32_t, Full> full;
  std::string mask_name;
  auto parens = [](const std::string& x) {
    bool atom = x.find(' ') == std::string::npos || (x.rfind("tl.", 0) == 0 && x.back() == ')');
    return atom ? x : "(" + x + ")";
  };
  for (const cost::MaskedPredicate& mp : mask->predicates) {
    auto [it, fresh] = exact.emplace(mp.where.v, false);
    if (fresh) it->second = skipping_is_exact(p_, loop, mp.where, mp.literal_child);
    Full& f = full[mp.where.v];
    f.literal_child = mp.literal_child;
    f.ok = f.ok && mp.complete && mp.predicate.cmp != cost::IndexPredicate::Cmp::Eq;
    // The predicate as integer forms `a*t + rest <= 0` (Lt: + 1; Eq: both signs).
    const cost::IndexPredicate& pr = mp.predicate;
    bool integral = is_small_integer(pr.constant);
    for (const cost::IndexPredicate::Term& t : pr.terms) integral = integral && is_small_integer(t.coef);
    if (!integral) {
      f.ok = false;
      continue;
    }
    std::vector<int> signs{1};
    if (pr.cmp == cost::IndexPredicate::Cmp::Eq) signs.push_back(-1);
    for (int sign : signs) {
      int64_t a = 0;
      Sum rest;      // the smallest value of the other terms over the program's tile
      Sum rest_max;  // and the largest
      rest.constant = sign * int64_t(std::llround(pr.constant)) + (pr.cmp == cost::IndexPredicate::Cmp::Lt ? 1 : 0);
      rest_max.constant = rest.constant;
      for (const cost::IndexPredicate::Term& t : pr.terms)
        if (t.role == 0) a += sign * int64_t(std::llround(t.coef));
      form_range(pr, sign, 1, s_lo, s_hi, rest, rest_max);
      // Where the predicate holds on all of block j: t <= -rest_max for its
      // last t, (j + 1)*B - 1 at most, or t >= rest_max for its first, j*B.
      if (a == 1) {
        Sum end;  // one past the last t allowed for every row
        end.add(rest_max, -1);
        end.constant += 1;
        f.highs.push_back(step == "1" ? clamp0(end) : parens(clamp0(end)) + " // " + step);
      } else if (a == -1) {
        if (!(rest_max.is_constant() && rest_max.constant <= 0))
          f.lows.push_back(step == "1" ? clamp0(rest_max) : "tl.cdiv(" + clamp0(rest_max) + ", " + step + ")");
      } else {
        f.ok = false;
      }
      if (!it->second) continue;
      // The block j covers t in [j*B, min((j+1)*B, T) - 1].
      if (a == 1) {  // t <= -rest: blocks up to the one holding -rest
        Sum end;     // one past the last allowed t
        end.add(rest, -1);
        end.constant += 1;
        if (end.is_constant() && end.constant <= 0)
          highs.push_back("0");
        else
          highs.push_back(step == "1" ? clamp0(end) : "tl.cdiv(" + clamp0(end) + ", " + step + ")");
      } else if (a == -1) {  // t >= rest: blocks from the one holding rest
        if (rest.is_constant() && rest.constant <= 0) continue;
        std::string first = clamp0(rest);
        bool atom = !rest.nonnegative() || (rest.terms.size() == 1 && rest.terms[0].second == 1 && rest.constant == 0);
        lows.push_back(step == "1" ? first : (atom ? first : "(" + first + ")") + " // " + step);
      } else {
        continue;  // other slopes would need a floor division of signed values
      }
      if (mask_name.empty()) {
        Symbol name = p_.name_of(p_.children(mp.where)[0]);
        if (!name.valid()) name = p_.name_of(mp.where);
        mask_name = name.valid() ? std::string(name.str()) : "the index mask";
      }
    }
  }
  LoopRange r;
  std::vector<std::string> full_lows, full_highs;
  for (const auto& [where, f] : full) {
    if (!f.ok) continue;
    const NodeId w{where};
    r.holds.emplace(where, f.literal_child == 2 ? 1 : 2);
    full_lows.insert(full_lows.end(), f.lows.begin(), f.lows.end());
    full_highs.insert(full_highs.end(), f.highs.begin(), f.highs.end());
    if (mask_name.empty()) {
      Symbol name = p_.name_of(p_.children(w)[0]);
      if (!name.valid()) name = p_.name_of(w);
      mask_name = name.valid() ? std::string(name.str()) : "the index mask";
    }
  }
  if (lows.empty() && highs.empty() && r.holds.empty()) return std::nullopt;
  r.mask_name = mask_name;
  auto fold = [](std::string x, const std::vector<std::string>& xs, const char* fn) {
    for (const std::string& y : xs) x = x.empty() ? y : std::string(fn) + "(" + x + ", " + y + ")";
    return x;
  };
  r.lo = fold("", lows, "tl.maximum");
  if (r.lo.empty()) r.lo = "0";
  r.hi = fold(count, highs, "tl.minimum");
  if (!r.holds.empty()) {
    r.full_lo = fold("", full_lows, "tl.maximum");
    r.full_hi = fold("", full_highs, "tl.minimum");
  }
  return r;
}

std::string KernelEmitter::grid_live() {
  std::optional<cost::GridMaskTerms> mask = cost::find_grid_mask_terms(p_, kernel_);
  if (!mask) return "";
  // The program's rows of the axis's dim: s_lo to s_hi (a ragged last block).
  const Coord c = coord(mask->axis);
  Sum s_lo, s_hi;
  block_rows(c.expr, c.block, extent(mask->axis.dim), s_lo, s_hi);
  std::vector<std::string> conds;
  for (const cost::IndexPredicate& pr : mask->predicates) {
    // The smallest and the largest value of the predicate's form on the block
    // (integral: find_grid_mask_terms keeps no other).
    Sum lo, hi;
    lo.constant = hi.constant = int64_t(std::llround(pr.constant));
    form_range(pr, 1, 0, s_lo, s_hi, lo, hi);
    switch (pr.cmp) {
      case cost::IndexPredicate::Cmp::Lt:
        conds.push_back("(" + lo.text() + " < 0)");
        break;
      case cost::IndexPredicate::Cmp::Le:
        conds.push_back("(" + lo.text() + " <= 0)");
        break;
      case cost::IndexPredicate::Cmp::Eq:
        conds.push_back("(" + lo.text() + " <= 0)");
        conds.push_back("(" + hi.text() + " >= 0)");
        break;
    }
  }
  std::string out;
  for (const std::string& x : conds) out += (out.empty() ? "" : " & ") + x;
  return out;
}

}  // namespace eqf::codegen
