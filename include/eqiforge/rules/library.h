// The rule library (DESIGN §2.5, §4): six families of equalities over the
// IR, as tables, and the named rule sets and default schedule through which
// the e-graph's runner and the CLI use them.
//
//   algebraic          comm/assoc, distributivity, factor moving, exp/log,
//                      division, mean/variance, layout commuting
//   refinement         introduce tiling on one operator (matmul on M/N/K/batch,
//                      reductions on an output or the reduced dim)
//   propagation        move partition/replicate across every operator
//                      (derived from the op table's properties)
//   reduction-fusion   independent tuple fusion, dependent fusion with a
//                      repair (exp-scaling, mean shift), as data
//   structural         combine/partition inverses, kernel introduction,
//                      axis interchange, tuple/proj laws
//   storage            preduce over an axis <=> reduce over the dim made by
//                      collecting that axis (a kernel boundary)
//
// Every rule is checked, not trusted: eqiforge/rules/verify.h instantiates
// each one on random small tensors and compares both sides.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/egraph/rewrite.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/egraph/schedule.h"

namespace eqf {

// Limits that keep saturation finite. Checked by the appliers that add axes
// or tuple components; every rule that only moves existing axes keeps them.
struct RuleOptions {
  int max_nesting_per_dim = 2;  // levels d.0 .. d.(n-1) of one dim
  int max_grid_axes = 3;        // axes of a kernel body that the kernel combines
  int max_loop_axes = 2;        // axes a kernel reduces in loops (preduce)
  int max_fused_arity = 3;      // components of a fused tuple reduction
  // Algebra (comm/assoc, factor moving, ...) runs on global values only:
  // tile-level terms are images of global ones under propagation, so the
  // algebra reaches them without rewriting every tile of every class.
  bool algebra_on_tiles = false;
  // The expanding directions of distributivity and factor moving
  // (a(b+c) -> ab+ac, s*sum(x) -> sum(s*x)). With associativity and
  // commutativity they grow the e-graph without bound (every polynomial
  // expansion of every product), so by default only the factoring
  // directions run; the soundness check covers both.
  bool expanding_algebra = false;
  // The one-pass variance, sum((x - mean)^2) = sum(x^2) - n mean^2: exact,
  // but in floating point it cancels when the mean is large against the
  // spread (x near 5.5 with a spread of 0.1 loses 3 digits of f32). PyTorch
  // and Inductor compute variance by Welford, and so does the repaired
  // reduction (reduction-fusion: mean-shift), which gives one pass without
  // the cancellation; so it is off by default.
  bool cancelling_algebra = false;
};

enum class Family { Algebraic, Refinement, Propagation, ReductionFusion, Structural, Storage };
inline constexpr Family kAllFamilies[] = {Family::Algebraic,       Family::Refinement, Family::Propagation,
                                          Family::ReductionFusion, Family::Structural, Family::Storage};

// "algebraic", "refinement", "propagation", "reduction-fusion", "structural", "storage"
std::string_view family_name(Family f);
std::optional<Family> parse_family(std::string_view name);  // also accepts "fusion"

// The rules of one family (fresh objects: a runner takes them by value).
// Throws eqf::Error naming the rule if a table entry is malformed.
std::vector<Rewrite> family_rules(Family f, const RuleOptions& opts = {});
std::vector<Rewrite> all_rules(const RuleOptions& opts = {});

// One row of `eqiforge-opt rules`: the rule, its family and its text.
struct RuleInfo {
  std::string name;
  Family family;
  std::string text;  // "lhs => rhs if conditions", or "lhs => <computed: what>"
};
std::vector<RuleInfo> rule_infos(const RuleOptions& opts = {});

// The default schedule over the family sets: algebra first, to saturation,
// then everything that tiles, moves and fuses, to saturation.
Schedule default_schedule();

// Registers the sets `algebraic`, `refinement`, `propagation`,
// `reduction-fusion`, `structural`, `storage` and `all` (with default
// options) with the e-graph's rule-set registry, so `--rules NAME` finds
// them. Idempotent.
void register_rule_sets();

// Adds every family set (with `opts`) and the default schedule to a runner.
void add_rule_library(Runner& runner, const RuleOptions& opts = {});

}  // namespace eqf
