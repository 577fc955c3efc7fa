// The cost guide of best-first extraction: a local price for every filling
// of a class and, for every (class, requirement) pair, the cheapest price of
// a whole subprogram below it.
//
// Saturated e-graphs hold far more valid programs than can be built, so
// extraction cannot enumerate them all. Best-first expansion takes the
// partial program with the smallest `spent + to_go` first: `spent` sums the
// prices of its filled classes, `to_go` the cheapest subprogram of each hole.
// The first complete programs are then the cheap ones, and the search stops
// after enough candidates for the exact cost model to rank.
//
// A partial program's price is `spent` plus each hole's `to_go`; a tile
// reached again from another loop or kernel (partial.h: scopes) is charged
// its `to_go` again, since kernel formation computes it again there.
//
// A price is an estimate in seconds on the target, additive over fillings,
// so that a fixpoint over the e-graph (the classic bottom-up extraction, with
// the requirements of choice.h as context) gives `to_go`:
//   - a load chain ending at a buffer reads its top's elements once per
//     coordinate of every axis in scope (replicated axes re-read it);
//   - an operator does one flop per element of its result over all
//     coordinates (reductions: of their operand; tile_matmul: 2 per
//     multiply-add, on the tensor cores for 16-bit operands when it lowers
//     to tl.dot -- two 2-D operand tiles; with a batch dim left in the tile
//     it is a broadcast product on the FP units, whose tile must fit the
//     registers and, past them at nominal blocks, is charged for the
//     smaller blocks it forces);
//   - a kernel root (grid chain or collect) costs a launch and its store.
// A filling whose tile cannot fit for any block sizes (the dims no axis
// blocks already exceed the registers, the shared memory or Triton's tile
// limit) is priced +inf: no candidate through it is feasible.
// Block sizes are not chosen yet: every axis is priced at a nominal block
// (64 at level 0, a quarter of the enclosing block below), except the batch
// axes of tile_matmuls, which lowering fixes to 1 (lower/kernel.h: unit
// axes) -- 64 heads of scores in one program would look like register
// pressure no candidate has. The sum ignores
// the overlap of memory and compute and the sharing of subprograms used
// twice; it only orders the search. The candidates it finds are ranked by
// the cost model proper.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <set>
#include <unordered_map>
#include <span>
#include <vector>

#include "eqiforge/cost/target.h"
#include "eqiforge/egraph/egraph.h"
#include "extract/choice.h"
#include "extract/flat_set.h"
#include "extract/partial.h"

namespace eqf::extract {

// Two pricings, each blind where the other sees (extraction runs one pass
// with each and ranks the union):
//   tree     a partial program's holes each cost their whole cheapest
//            subprogram, shared parts counted again;
//   shared   the holes' cheapest subprograms are united, each class counted
//            once per scope (the parts of an online softmax's state read the
//            same scores: as trees the fused form looks three times its
//            price until its last hole is filled), a tuple costs its dearest
//            part, and a computed tile past the registers at nominal blocks
//            is charged for the re-reads that the smaller blocks it forces
//            will cost.
enum class GuidePricing : uint8_t { Tree, Shared };

// How a kernel below a use at weight w (computed w times per program run:
// replicated over grid axes, or under a kernel of few programs) is priced:
//   inherited  w times, as if the user ran it again each time -- pessimistic
//              for a kernel of its own below a kernel of few programs, such
//              as flash-decoding's partial states under its merge kernel;
//   own        once, at the weight of its own grid: kernel formation stores
//              its result once and the user loads it.
// Extraction runs passes with both: which candidates each reaches first
// differs, and the cost model ranks their union.
enum class KernelWeight : uint8_t { Inherited, Own };

// How a shared pricing with kernels at their own weight completes a partial
// program (each blind where another sees; extraction runs a pass with each,
// and the cost model ranks the union):
//   apart    each hole's cheapest subprogram, united as above;
//   joined   as apart, but a hole that one filling joins to the rest of the
//            partial program (its children filled, or holes already) costs
//            that filling alone, where its cheapest subprogram on its own
//            would count a kernel the program does not need
//            (flash-decoding's merge split on the value dim: the normalizer
//            and the weighted values are two projections of one merge,
//            which priced apart counted the key blocks' kernel twice);
//   acyclic  as apart, but counted as the completed program would run: a
//            kernel of its own once, whatever scopes read it; a class
//            reached again from another scope only for what is computed
//            again there (Filler's charge), not the kernels it reads; and no
//            filling that closes a cycle. A fused tuple holds its own
//            components (proj i of the tuple is its i-th part), so a class
//            may be filled with a proj of a tuple that reads it: through the
//            filled classes the filler refuses that, and through the class
//            that reached the tuple the fixpoint prices it as the tuple's
//            other part. Counted as they come, those dead ends looked free
//            and the search spent its states on them (attention with a
//            sink, cut by the partitioner: three outputs read one
//            flash-decoding state, which the other completions priced at 2
//            to 5 times its price);
//   program  as acyclic, and the dearest hole is counted first, then each
//            class takes the filling that costs least with what is counted
//            (the whole attention-with-a-sink layer: its outputs join the
//            state the dearest one counts). Dearer to compute: every class
//            counted weighs its fillings.
//   counted  as program, and a hole's fillings whose estimates are near the
//            least are counted, the least count winning (a fused tuple's
//            estimate is optimistic: its parts may count as separate
//            loops); the dearest hole's near fillings are each counted with
//            the whole completion, since what it counts decides what the
//            others can join. At an H100's bandwidth the program completion
//            priced the partial programs on the way to the sink's one-kernel
//            form up to 2.5x its price, past every candidate its pass found
//            (28.6 us by the model, 37.1 found). Dearer still: a hole is
//            counted once per near filling. It complements program, which
//            finds others' best (differential attention's core: 7.42 us
//            against this one's 8.23).
enum class Completion : uint8_t { Apart, Joined, Acyclic, Program, Counted };

// The acyclic completions (acyclic, program, counted) count a kernel of its
// own once, whatever scopes read it.
constexpr bool counts_kernels_once(Completion c) {
  return c == Completion::Acyclic || c == Completion::Program || c == Completion::Counted;
}

class CostGuide {
 public:
  // completion: how remaining() completes a partial program (anything but
  // apart only with shared pricing and KernelWeight::Own).
  CostGuide(const EGraph& g, OptionTable& table, const Target& target, GuidePricing pricing,
            KernelWeight kernel_weight, Completion completion = Completion::Apart);

  // The price of a partial program: what it spent plus its completion.
  double partial_price(const PartialProgram& s);

  // The shared memory the most demanding kernel of s needs at any block
  // sizes, at least: the sum, over the loads filled in it, of their
  // smallest tiles (in a kernel with a dot, a load of two live dims padded
  // to the smallest dot, as the cost model stages it for tl.dot). A lower
  // bound of the cost model's count at every choice of blocks: a class
  // loaded in two kernels counts in the first one only, and pipeline
  // stages count once. Past the target's budget, s is infeasible however
  // it is completed (single tiles past it are price()'s) -- but not its
  // reuse twin, whose kernels load a stored result instead of computing it
  // again (ngpt's best candidates are such twins), so it does not prune
  // partial programs: it spares complete ones their estimate.
  double least_staging_bytes(const PartialProgram& s);

  // Computes to_go for every pair the table's analysis reached: rounds of
  // a fixpoint until no price moves, or until the deadline (the prices of
  // the last round then order the search). False when the deadline cut it.
  bool analyze(std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  bool analyzed() const { return analyzed_; }
  GuidePricing pricing() const { return pricing_; }
  bool counts_kernels_once() const { return eqf::extract::counts_kernels_once(completion_); }
  // Program and Counted also join what earlier holes counted.
  bool joins() const { return completion_ == Completion::Program || completion_ == Completion::Counted; }
  KernelWeight kernel_weight() const { return kernel_weight_; }
  Completion completion() const { return completion_; }
  // Another completion (a pass that reuses this analysis).
  void set_completion(Completion c) { completion_ = kernel_weight_ == KernelWeight::Own ? c : Completion::Apart; }

  // The price of filling class c with its option i (its children excluded).
  double price(EClassId c, uint32_t option);
  // The factor option o's children's prices are multiplied by, in a kernel
  // with grid `*grid` (packed axes):
  //   - a replicate of a tile computed in the kernel, over one of its grid
  //     axes, is computed again by every program along that axis (kernel
  //     formation keeps no values across programs), so everything below it
  //     costs that many times. Loop axes add nothing: lowering hoists a tile
  //     out of the loops it does not vary over.
  //   - a kernel root with fewer programs (at nominal blocks) than it takes
  //     to reach the target's kernel bandwidth is that much slower: its body
  //     costs `slowdown` times.
  // The fixpoint's to_go knows no kernel (grid null): every replicated axis
  // then counts as a grid axis. Partial programs carry the exact weights, for
  // their kernel's grid, in their holes.
  double child_weight(EClassId c, const Option& o, const std::vector<uint32_t>* grid) const;
  // The cheapest subprogram filling c under requirement req, used at
  // `weight` (how many times the enclosing kernel computes it); +inf if none.
  // A tree price: a class its subprogram reaches twice counts twice. A
  // subprogram whose top is a kernel root (a grid chain, a collect) is a
  // kernel of its own, run once whatever its user's weight: kernel formation
  // stores its result and the user loads it (with KernelWeight::Own).
  // `grid`: the grid axes of the kernel c is computed in, as the partial
  // program knows it (null above every kernel or not known): a preduce over
  // one of them has no kernel form (Filler::fill_first_hole), so it is no
  // option there. See "Kernel contexts" below.
  double to_go(EClassId c, uint8_t req, double weight = 1, const std::vector<uint32_t>* grid = nullptr) const;
  // What computing c again in another scope costs (Filler's charge): with
  // Completion::Acyclic, Program and Counted, its cheapest subprogram's fillings within the
  // user's kernel only -- the kernels of their own below it and the buffers
  // it reads are stored once and loaded (three output kernels read one
  // flash-decoding merge: charged with its key-blocks kernel each, that
  // form cost 5x its price). Otherwise to_go.
  double recompute_price(EClassId c, uint8_t req, double weight, const std::vector<uint32_t>* grid) const;
  // The weight a filling of a use at `use_weight` is priced at: 1 for a
  // kernel root when kernels have their own weight (see KernelWeight).
  double filling_weight(double use_weight, const Option& o) const { return own_root(o) ? 1 : use_weight; }

  // The price of completing s: the holes' cheapest subprograms (the options
  // the fixpoint chose) united, each class counted once per scope it is
  // computed in; a class s filled in that scope is free. Sharing matters:
  // the parts of an online softmax's state all read the same scores.
  double remaining(const PartialProgram& s);

 private:
  double elements(const Type& t) const;        // over every coordinate of its axes
  double elements(const TensorType& t) const;
  double tile_elements(const TensorType& t) const;  // one tile, at nominal blocks
  // Elements of t's tile at the smallest blocks (`block_floor`, at most the
  // dim's extent): what the dims no axis blocks hold already. A floor past
  // 1 is a dot's: every dim, whole ones too, padded to a power of two of at
  // least the floor, as the emitter pads tl.dot's tiles.
  double min_extent(const TensorType& t, Symbol d, double block_floor) const;  // one dim of min_elements
  double dot_extent(Symbol d, double block_floor) const;  // a whole dim in a dot's tile: its padded extent
  double min_elements(const TensorType& t, double block_floor = 1) const;
  // Whether t's tile fits `budget` bytes for some block sizes.
  bool fits(const TensorType& t, double element_bytes, int64_t budget, double block_floor = 1) const;
  bool dot_operands_fit(const Option& tile_matmul) const;
  bool is_load(const Option& o) const;  // a chain that reads a buffer (else a broadcast in registers)
  // What least_staging_bytes needs of filling class c with option i.
  struct StagingFacts {
    double bytes = 0;      // a load's smallest tile (0: not a load)
    double dot_bytes = 0;  // the same in a kernel with a dot
    bool dot = false;      // a tile_matmul that lowers to tl.dot
  };
  const StagingFacts& staging(EClassId c, uint32_t option);
  bool squeezed(const TensorType& t, Symbol d) const;  // d has no dimension in t's tile
  int live_dims(const TensorType& t) const;             // dims not squeezed out of its tile
  bool is_dot(const Option& tile_matmul) const;       // lowers to tl.dot (else a broadcast product)
  TensorType product_tile(const Option& tile_matmul) const;
  double slowdown(const Option& kernel_root) const;
 public:
  // The weight a child class gets from its parent's `weight`: 1 for a
  // buffer (global class), which its own kernel computes once.
  double child_share(EClassId child, double weight) const;
 private:
  double block(Axis a) const;                  // nominal block size
  double coords(Axis a) const;                 // coordinates of a, at nominal blocks
  double extent(Symbol dim) const;
  double compute_price(EClassId c, const Option& o, bool dot) const;  // dot: a tile_matmul that is_dot
  double pressure_price(const TensorType& t) const;

  const EGraph& g_;
  OptionTable& table_;
  const Target& target_;
  GuidePricing pricing_;
  KernelWeight kernel_weight_;
  Completion completion_;
  bool analyzed_ = false;  // analyze() ran (a pass that only switches completion_ reuses it)
  size_t tracks_;  // of kTracks in use: inherited weights scale every price alike, one is enough
  std::set<Axis> unit_axes_;                 // batch axes of the e-graph's tile_matmuls
  std::vector<std::vector<double>> prices_;  // per class, per option; empty until asked
  std::vector<std::vector<StagingFacts>> staging_;  // the same
  struct KernelStaging {
    uint32_t kernel;
    double bytes, dot_bytes;
    bool dot;
  };
  std::vector<KernelStaging> kernel_staging_;  // least_staging_bytes's scratch
  // A subprogram's price as a function of the weight w it is used at:
  // a * w + b. Its fillings within the user's kernel scale with w (a); the
  // kernels of their own below it, and buffers, do not (b). Which
  // subprogram is cheapest depends on w -- one with a kernel of its own wins
  // below a kernel of few programs (a heavy weight), loses at weight 1 -- so
  // the fixpoint keeps the cheapest at each of kTrackWeights and a use takes
  // the cheapest of those at its own weight.
  static constexpr uint32_t kNoOption = 0xFFFFFFFFu;
  struct Go {
    double a = 0, b = std::numeric_limits<double>::infinity();
    uint32_t option = kNoOption;
    double at(double w) const { return a * w + b; }
  };
  static constexpr size_t kTracks = 2;
  static constexpr double kTrackWeights[kTracks] = {1, 32};
  bool own_root(const Option& o) const { return kernel_weight_ == KernelWeight::Own && o.kernel_root; }
  const Go* cheapest(EClassId c, uint8_t req, double weight, uint64_t ctx = 0) const;  // null: none
  const Go* tracks(EClassId c, uint8_t req, uint64_t ctx) const;  // the pair's kTracks prices; null: none
  std::vector<Go> go_;  // ((class * 16 + requirement) * kTracks + track)

  // Kernel contexts. A hole in a kernel the partial program has filled
  // cannot take a preduce over one of that kernel's grid axes, and the
  // cheapest subprogram without it may cost a kernel more: a scalar that a
  // loop over k reduces, used in a kernel with grid k, is reduced there by a
  // kernel of its own (a collect) instead. Priced as if the loop were
  // possible, every partial program through such a hole looked as cheap as
  // the best, and best-first order expanded their product before reaching
  // any of the dead ends (bug 47: 1.5 million states for a layer norm
  // followed by an RMS norm over 7 elements). So a pair is also priced in
  // each context it is reached in: the loop axes the kernel's grid forbids
  // among those the class may reach within the kernel (a 64-bit set over
  // loop_axes_; context 0, none, is go_). The fixpoint itself knows no
  // kernel, as for weights: a kernel root's body is priced in context 0, and
  // only holes below a filled kernel root get a context.
  uint64_t axis_bits(const std::vector<uint32_t>& axes) const;  // those in loop_axes_
  uint64_t context(EClassId c, uint64_t grid_bits) const {
    return c.v < loops_below_.size() ? grid_bits & loops_below_[c.v] : 0;
  }
  bool forbidden(const Option& o, uint64_t ctx) const;  // a preduce over an axis of context ctx
  void find_loops();                                        // loop_axes_ and loops_below_
  void find_contexts();                                     // contexted_
  std::vector<uint32_t> loop_axes_;    // of every preduce option, packed and sorted; the first 64
  std::vector<uint64_t> loops_below_;  // per class: the loop axes it may reach within its kernel
  struct Contexted {
    EClassId cls;
    uint8_t req;
    uint64_t context;
  };
  struct ContextKey {
    uint64_t pair, context;  // pair: class * 16 + requirement
    friend bool operator==(const ContextKey&, const ContextKey&) = default;
  };
  struct ContextHash {
    size_t operator()(const ContextKey& k) const { return size_t(mix_context(k.pair, k.context)); }
    static uint64_t mix_context(uint64_t a, uint64_t b) { return (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full); }
  };
  std::vector<Contexted> contexted_;  // the pairs reached in a context, in the order found
  std::unordered_map<ContextKey, uint32_t, ContextHash> context_index_;  // into contexted_
  std::vector<Go> context_go_;         // (index in contexted_ * kTracks + track)

  struct Pending {
    Hole hole;
    const std::vector<uint32_t>* grid;  // its kernel's grid axes (null above every kernel)
    uint64_t grid_bits;  // axis_bits of the filled kernel's grid; 0 above it and below a kernel root chosen here
    uint32_t parent = kNoScope;  // the class whose filling reached it (kNoScope: a hole of the partial program)
  };
  // A hole's price when some filling of it reads only classes the partial
  // program already has (filled, or holes paid for on their own): that
  // filling alone. kInf when there is none. (Completion::Joined)
  double joined_price(const PartialProgram& s, const Hole& h);
  void push_holes(const PartialProgram& s);  // s's holes onto stack_, oldest first
  // Counts filling the pending class with `option`: its children onto
  // stack_, its price (at its weight) returned.
  double count_filling(const Pending& p, uint32_t option) { return count_filling(p, option, stack_); }
  double count_filling(const Pending& p, uint32_t option, std::vector<Pending>& stack);
  std::vector<Pending> stack_;               // remaining()'s scratch
  StampedSet seen_;
  StampedSet holes_;  // remaining()'s holes (hole_key), with Completion::Joined only

  // Completion::Acyclic, Program and Counted (see there).
  double program_remaining(const PartialProgram& s);
  // Whether class k, used from `scope`, is paid for already: filled in that
  // scope (a kernel of its own: in any), or (Program and Counted) counted
  // for an earlier hole -- never what the current hole's own count reached:
  // a class may read a fused tuple that holds it, and joining it there
  // would price a cycle.
  bool paid(const PartialProgram& s, EClassId k, uint32_t scope) const;
  // Whether filling `hole` with o reads a filled class that leads back to it.
  bool closes_cycle(const PartialProgram& s, const Option& o, uint32_t hole);
  // Whether filling c with o reads the class that reached c (`parent`).
  static bool reads(const Option& o, uint32_t parent);
  // The filling of a pending class whose price plus its unpaid children's
  // cheapest subprograms is least, and none that closes a cycle (for a
  // hole of s) or reads its parent. kNoOption when there is none.
  struct Filling {
    uint32_t option = kNoOption;
    double price = std::numeric_limits<double>::infinity();
  };
  Filling least_filling(const PartialProgram& s, const Pending& p, bool is_hole);
  // least_filling's estimate of filling p's class with option i: its price
  // plus its unpaid children's cheapest subprograms; kInf if that filling is
  // excluded or costs `bound` or more.
  double filling_estimate(const PartialProgram& s, const Pending& p, uint32_t i, bool is_hole, double bound);
  // One step of program_remaining's count: the filling of the pending class
  // `top` (none if it is paid for already), its price added to `total` and
  // its children pushed. False at a dead end. A trial (hole_filling) counts
  // into trial_seen_ and trial_stack_, leaving the count's state as it is.
  bool count_pending(const PartialProgram& s, const Pending& top, bool is_hole, bool trial, double& total,
                     uint32_t forced = kNoOption);
  // program_remaining's count of the holes on stack_ (the dearest last),
  // the first one popped filled with `first_option` unless kNoOption; kInf
  // once it reaches `bound`.
  double count_program(const PartialProgram& s, size_t holes, uint32_t first_option,
                       double bound = std::numeric_limits<double>::infinity());
  // Whether class c filled with `option`, a kernel of its own, costs nothing
  // more in the count: s fills it so, or the count has counted it.
  bool kernel_counted(const PartialProgram& s, EClassId c, uint32_t option) const;
  // Into trial_fillings_: the fillings of `hole` whose estimate is within
  // kTrialRange of the least, at most kTrialFillings, least first.
  void near_fillings(const PartialProgram& s, const Pending& hole);
  std::vector<Filling> first_fillings_;
  // Completion::Counted's filling of one of s's holes: of the fillings whose
  // estimate is within kTrialRange of the least (at most kTrialFillings),
  // the one whose count is least. kNoOption when every filling closes a
  // cycle.
  uint32_t hole_filling(const PartialProgram& s, const Pending& hole);
  static constexpr size_t kTrialFillings = 16;
  static constexpr double kTrialRange = 1.5;
  std::vector<Filling> trial_fillings_;
  std::vector<Pending> trial_stack_;
  StampedSet trial_seen_;
  std::vector<Pending> holes_first_;  // the holes, dearest last (the stack pops from its back)
  std::vector<double> hole_price_;
  std::vector<uint32_t> hole_order_;
  StampedSet counted_;              // what the holes before the current one counted
  std::vector<uint64_t> counting_;  // what the current hole has counted
  std::vector<uint32_t> reach_stack_;
  StampedSet reach_seen_;
};

}  // namespace eqf::extract
