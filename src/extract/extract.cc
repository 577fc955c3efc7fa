// The extraction driver (see eqiforge/extract/extract.h): breadth-first
// expansion of partial programs with early compression, validity of the
// complete ones, cost pruning and ranking.
#include "eqiforge/extract/extract.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <unordered_set>

#include "eqiforge/ir/diagnostic.h"
#include "extract/build.h"
#include "extract/choice.h"
#include "extract/flat_set.h"
#include "extract/guide.h"
#include "extract/hash_mix.h"
#include "extract/kernel_dims.h"
#include "extract/partial.h"
#include "extract/reuse.h"
#include "eqiforge/extract/canonical.h"

namespace eqf {

std::string_view extract_mode_name(ExtractMode m) {
  switch (m) {
    case ExtractMode::None: return "none";
    case ExtractMode::After: return "after";
    case ExtractMode::Early: return "early";
  }
  return "early";
}

std::optional<ExtractMode> parse_extract_mode(std::string_view text) {
  if (text == "none") return ExtractMode::None;
  if (text == "after") return ExtractMode::After;
  if (text == "early") return ExtractMode::Early;
  return std::nullopt;
}

std::string_view extract_order_name(ExtractOrder o) {
  switch (o) {
    case ExtractOrder::BestFirst: return "best";
    case ExtractOrder::BreadthFirst: return "bfs";
    case ExtractOrder::DepthFirst: return "dfs";
  }
  return "best";
}

std::optional<ExtractOrder> parse_extract_order(std::string_view text) {
  if (text == "best") return ExtractOrder::BestFirst;
  if (text == "bfs") return ExtractOrder::BreadthFirst;
  if (text == "dfs") return ExtractOrder::DepthFirst;
  return std::nullopt;
}

namespace {

using namespace extract;
using Clock = std::chrono::steady_clock;

// The partial programs waiting to be expanded, taken in the order's turn:
// first in first out, last in first out, or smallest price first (ties: the
// fewest holes, then the newest, which completes one program before
// starting the next among equals).
class Frontier {
 public:
  explicit Frontier(ExtractOrder order) : order_(order) {}

  bool empty() const { return order_ == ExtractOrder::BestFirst ? heap_.empty() : queue_.empty(); }

  void push(PartialProgram&& s, double price) {
    bytes_ += state_bytes(s);
    if (order_ != ExtractOrder::BestFirst) {
      queue_.push_back(std::move(s));
      return;
    }
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      slots_[slot] = std::move(s);
    } else {
      slot = uint32_t(slots_.size());
      slots_.push_back(std::move(s));
    }
    heap_.push(Entry{price, uint32_t(slots_[slot].holes.size()), seq_++, slot});
  }

  PartialProgram pop() {
    PartialProgram s;
    switch (order_) {
      case ExtractOrder::BreadthFirst:
        s = std::move(queue_.front());
        queue_.pop_front();
        break;
      case ExtractOrder::DepthFirst:
        s = std::move(queue_.back());
        queue_.pop_back();
        break;
      case ExtractOrder::BestFirst: {
        uint32_t slot = heap_.top().slot;
        heap_.pop();
        s = std::move(slots_[slot]);
        free_.push_back(slot);
        break;
      }
    }
    bytes_ -= state_bytes(s);
    return s;
  }

  // What the queued partial programs hold (their arrays and the queue's
  // entries), for the memory limit.
  size_t bytes() const { return bytes_; }
  static size_t state_bytes(const PartialProgram& s) {
    return sizeof(PartialProgram) + sizeof(Entry) + s.filled.capacity() * sizeof(Filled) +
           s.holes.capacity() * sizeof(Hole);
  }

  // Depth-first pops the last child first: reversing the children just
  // pushed keeps the options' order.
  size_t mark() const { return queue_.size(); }
  void children_pushed(size_t mark) {
    if (order_ == ExtractOrder::DepthFirst) std::reverse(queue_.begin() + long(mark), queue_.end());
  }

 private:
  struct Entry {
    double price;
    uint32_t holes;
    uint64_t seq;
    uint32_t slot;
    // std::priority_queue keeps the largest on top: "larger" = taken later.
    bool operator<(const Entry& o) const {
      if (price != o.price) return price > o.price;
      if (holes != o.holes) return holes > o.holes;
      return seq < o.seq;
    }
  };
  ExtractOrder order_;
  std::deque<PartialProgram> queue_;
  std::vector<PartialProgram> slots_;
  std::vector<uint32_t> free_;
  std::priority_queue<Entry> heap_;
  uint64_t seq_ = 0;
  size_t bytes_ = 0;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double tensor_bytes(const DimTable& dims, const TensorType& t) {
  double n = dtype_bytes(t.dtype);
  for (Symbol d : t.dims)
    if (const DimInfo* info = dims.find(d); info && !info->collected_from) n *= double(info->extent);
  return n;
}

class Enumerator {
 public:
  Enumerator(const EGraph& g, std::span<const EClassId> roots, std::span<const OutputDecl> outputs,
             const ExtractOptions& options)
      : g_(g), roots_(roots.begin(), roots.end()), outputs_(outputs), opt_(options), table_(g, options.limits),
        filler_(table_) {
    for (EClassId& r : roots_) r = g_.find(r);
    for (EClassId r : roots_) {
      const Type& t = g_.type(r).get();
      if (!t.is_tuple) output_bytes_ += tensor_bytes(g_.dims(), t.tensor());
    }
  }

  ExtractResult run() {
    Clock::time_point start = Clock::now();
    if (opt_.order == ExtractOrder::BestFirst) {
      // One pass per pricing and kernel weight, each with its share of the
      // time; a candidate an earlier pass found is not built again.
      // The second pass expands last the partial programs whose loads
      // already exceed shared memory (`defer`), where the first met any;
      // the first keeps them in their order, since some workloads' best
      // candidates are the reuse twins of staged-out ones (ngpt's).
      // The own-weight passes complete a partial program in three ways
      // (guide.h: Completion): joined reaches flash-decoding's merge split
      // on the value dim, which apart prices with the key blocks' kernel
      // twice; program reaches the state that the three outputs of an
      // attention with a sink share. As the only own-weight pass, joined
      // lost other workloads' best candidates (rmsnorm_swiglu_ffn b8, b16),
      // so each complements the ones before it.
      struct Pass {
        GuidePricing pricing;
        KernelWeight kernel_weight;
        bool defer;
        Completion completion;
      };
      constexpr Pass kPasses[] = {
          {GuidePricing::Tree, KernelWeight::Inherited, false, Completion::Apart},
          {GuidePricing::Tree, KernelWeight::Inherited, true, Completion::Apart},
          {GuidePricing::Shared, KernelWeight::Inherited, false, Completion::Apart},
          {GuidePricing::Shared, KernelWeight::Own, false, Completion::Apart},
          {GuidePricing::Shared, KernelWeight::Own, false, Completion::Joined},
          {GuidePricing::Shared, KernelWeight::Own, false, Completion::Acyclic},
          {GuidePricing::Shared, KernelWeight::Own, false, Completion::Program},
          {GuidePricing::Shared, KernelWeight::Own, false, Completion::Counted},
      };
      for (const Pass& pass : kPasses) {
        const auto [pricing, kernel_weight, defer, completion] = pass;
        first_pass_ = &pass == &kPasses[0];
        acyclic_pass_ = counts_kernels_once(completion);
        // Deferring changes nothing where the first pass met no staged-out
        // partial program.
        if (defer && !met_staged_out_) continue;
        // The passes with kernels at their own weight complement the
        // others: each gets at most as many states as the inherited-weight
        // passes took together (and a floor), so that it cannot dominate the
        // search where its pricing reaches feasible candidates slowly. (As
        // many as all the passes before it, the four own-weight passes'
        // shares doubled one after the other: 4 million dead-end fillings,
        // 180 s, on differential attention's core at 1024 keys.)
        pass_states_ = kernel_weight == KernelWeight::Own
                           ? std::max<uint64_t>(inherited_states_, kMinComplementStates)
                           : std::numeric_limits<uint64_t>::max();
        // A pass that differs from the one before only in its completion
        // keeps its guide's analysis (seconds on large e-graphs).
        if (guide_ && guide_->pricing() == pricing && guide_->kernel_weight() == kernel_weight)
          guide_->set_completion(completion);
        else
          guide_.emplace(g_, table_, opt_.cost->target(), pricing, kernel_weight, completion);
        filler_.set_guide(&*guide_);
        // The first pass only watches for a staged-out partial program (up
        // to the first), the deferring pass checks every one.
        const bool watch = opt_.staging_bound && opt_.defer_staged_out && pricing == GuidePricing::Tree;
        staging_watch_ = !watch ? StagingWatch::Off : defer ? StagingWatch::Defer : StagingWatch::UntilFirst;
        seen_.clear();
        after_keys_.clear();
        best_ = {};
        feasible_found_ = 0;
        time_share_ = opt_.time_limit_s / double(std::size(kPasses));
        enumerate(Clock::now());
        if (kernel_weight == KernelWeight::Inherited) inherited_states_ = out_.stats.states_expanded;
        for (const Candidate& c : out_.candidates) found_.insert(c.key);
      }
    } else {
      time_share_ = opt_.time_limit_s;
      enumerate(start);
    }
    out_.stats.enumerate_seconds = seconds_since(start);
    Clock::time_point rank_start = Clock::now();
    rank();
    out_.stats.rank_seconds = seconds_since(rank_start);
    out_.stats.seconds = seconds_since(start);
    return std::move(out_);
  }

 private:
  // The optimistic bound of a partial program: its kernels cost a launch a
  // launch level (independent kernels share a fused launch): one, or two
  // once a kernel reads another's result (`chained`); and its inputs and the
  // outputs must cross memory once.
  double lower_bound(uint32_t kernels, bool chained, double input_bytes) const {
    const double launches = kernels == 0 ? 0 : chained ? 2 : 1;
    return launches * opt_.cost->launch_seconds() + opt_.cost->transfer_seconds(input_bytes + output_bytes_);
  }
  double kth_best() const {
    return best_.size() < opt_.prune_k ? std::numeric_limits<double>::infinity() : best_.top();
  }
  bool pruning() const { return opt_.cost && opt_.prune_k > 0; }

  double input_bytes(const Option& o) {
    if (!o.input) return 0;
    const InputDecl* d = g_.input_decl(attr_sym(g_.attrs(o.path.front()), 0));
    if (!d) return 0;
    double n = dtype_bytes(d->dtype);
    for (Symbol s : d->layout)
      if (const DimInfo* info = g_.dims().find(s)) n *= double(info->extent);
    return n;
  }

  void enumerate(Clock::time_point start) {
    ExtractStats& st = out_.stats;
    const uint64_t states_before = st.states_expanded;
    table_.analyze(roots_, kMaterial | kRoot);
    // Within the pass's time: the limit holds however large the e-graph
    // (cut short, the search is ordered by unsettled prices: a time limit).
    const Clock::time_point deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_share_));
    if (guide_ && !guide_->analyzed() && !guide_->analyze(deadline)) {
      st.limit_hit = true;
      st.limit = "time";
    }
    PartialProgram init;
    bool ok = true;
    for (EClassId r : roots_) ok = filler_.require(init, r, kMaterial | kRoot) && ok;
    if (!ok) return;  // some output has no valid filling at all
    const uint64_t built_before = st.complete_built;
    Frontier work(opt_.order);
    double init_price = guide_ ? guide_->partial_price(init) : 0;
    work.push(std::move(init), init_price);
    while (!work.empty()) {
      PartialProgram s = work.pop();
      if (pruning() && lower_bound(s.kernels, s.chained, s.input_bytes) > kth_best()) {
        ++st.pruned;
        continue;
      }
      if (s.complete()) {
        complete(s);
        if (opt_.max_candidates > 0 && feasible_found_ >= opt_.max_candidates) {
          st.enough = true;
          break;
        }
        if (feasible_found_ == 0 && st.complete_built - built_before >= kGiveWayBuilt && (!first_pass_ || met_staged_out_))
          break;  // gives way (see kGiveWayBuilt)
        continue;
      }
      if (st.states_expanded - states_before >= pass_states_) break;  // the pass's share, not a limit
      if (st.states_expanded - states_before >= opt_.max_states) {
        st.limit_hit = true;
        st.limit = "states";
        break;
      }
      if ((st.states_expanded & 255) == 0 && seconds_since(start) > time_share_) {
        st.limit_hit = true;
        st.limit = "time";
        break;
      }
      if ((st.states_expanded & 63) == 0 && opt_.memory_limit_bytes > 0) {
        size_t bytes = work.bytes() + seen_.bytes() + after_keys_.bytes();
        st.peak_memory_bytes = std::max<uint64_t>(st.peak_memory_bytes, bytes);
        if (bytes > opt_.memory_limit_bytes) {
          st.limit_hit = true;
          st.limit = "memory";
          break;
        }
      }
      ++st.states_expanded;
      const Hole hole = s.holes.front();
      EClassId c(hole.cls);
      std::span<const Option> options = table_.options(c);
      size_t mark = work.mark();
      for (uint32_t i = 0; i < options.size(); ++i) {
        const Option& o = options[i];
        if (!table_.viable(c, o, hole.req) || !permitted(o)) continue;
        Key key = s.key.plus(c, o.canon);
        // Algorithm 1, line 5: an equivalent partial program was seen, so its
        // expansion covers this one's completions.
        if (opt_.mode == ExtractMode::Early && !seen_.insert(key)) {
          ++st.skipped_equivalent;
          continue;
        }
        double in_bytes = input_bytes(o);
        if (pruning() && lower_bound(s.kernels + (o.kernel_root ? 1 : 0),
                                     s.chained || (o.kernel_root && hole.kernel != kNoScope),
                                     s.input_bytes + in_bytes) > kth_best()) {
          ++st.pruned;
          continue;
        }
        PartialProgram child = copy_for_filling(s, o);
        if (!filler_.fill_first_hole(child, i, in_bytes)) {
          ++st.dead_ends;
          continue;
        }
        double price = 0;
        if (guide_) {
          price = guide_->partial_price(child);
          // Some tile of it fits no block sizes: never feasible.
          if (price == std::numeric_limits<double>::infinity()) {
            ++st.pruned;
            continue;
          }
          // Some kernel's loads already need more shared memory than a
          // program has, at any block sizes: every completion is infeasible
          // except, perhaps, its reuse twin (which loads what it
          // recomputes). Expanded after every state that may still fit,
          // not dropped (mHC's MLP: 256,000 staged-out candidates were
          // built, best first, before any that fits).
          if (staging_watch_ != StagingWatch::Off && staged_out(child)) {
            if (staging_watch_ == StagingWatch::UntilFirst) {
              met_staged_out_ = true;
              staging_watch_ = StagingWatch::Off;
            } else {
              price += kStagedOutPrice;
              ++st.deferred;
            }
          }
        }
        work.push(std::move(child), price);
      }
      work.children_pushed(mark);
    }
  }

  // A copy of s with room for filling its first hole with o (one filled
  // class more, at most one hole per child), so that the filling does not
  // reallocate the arrays just copied.
  static PartialProgram copy_for_filling(const PartialProgram& s, const Option& o) {
    PartialProgram child;
    child.filled.reserve(s.filled.size() + 1);
    child.holes.reserve(s.holes.size() + o.children.size());
    child = s;  // the vectors' copy assignment keeps the reserved storage
    return child;
  }

  bool permitted(const Option& o) const {
    // A literal class has one filling, its constant, however it was written.
    if (opt_.only_nodes.empty() || o.op == Op::Const) return true;
    for (ENodeId n : o.path)
      if (n.v >= opt_.only_nodes.size() || !opt_.only_nodes[n.v]) return false;
    return true;
  }

  void complete(const PartialProgram& s) {
    ExtractStats& st = out_.stats;
    if (found_.count(s.key.a)) return;  // an earlier pass's candidate
    ++st.complete_built;
    Clock::time_point build_start = Clock::now();
    Program p = build_program(g_, table_, s, roots_, outputs_, opt_.program_name);
    if (opt_.mode == ExtractMode::After && !after_keys_.insert(s.key)) {
      st.build_seconds += seconds_since(build_start);
      return;
    }
    const double staging = guide_ && opt_.staging_bound ? guide_->least_staging_bytes(s) : 0;
    const Program* kept = add(std::move(p), s.key.a, s.spent, build_start, false, staging);
    if (!kept || !reusing()) return;
    // The twin of the candidate just kept (or just found infeasible: its
    // twin may fit, loading what it recomputed). Its key differs from every
    // search key by construction of the mix.
    Clock::time_point twin_start = Clock::now();
    if (std::optional<Program> twin = reuse_kernel_results(*kept))
      add(std::move(*twin), mix(s.key.a, 0x7e1f), s.spent, twin_start, true);
    else
      st.build_seconds += seconds_since(twin_start);
  }

  bool reusing() const { return opt_.cost && opt_.reuse_kernel_results; }

  // Some kernel of s needs more shared memory for its loads than a program
  // has, at any block sizes (CostGuide::least_staging_bytes).
  bool staged_out(const PartialProgram& s) {
    return guide_->least_staging_bytes(s) > double(opt_.cost->target().smem_bytes_per_program);
  }

  // Checks, estimates and keeps a candidate; returns its program, or null
  // when it is not valid. One estimated infeasible is counted and dropped
  // at once (its program stays in last_infeasible_ for its twin): ngpt has
  // thousands, and keeping them to the end cost a tenth of its extraction
  // in memory traffic and frees. `least_staging`: shared memory some kernel
  // of it needs at least (CostGuide::least_staging_bytes); past the
  // target's, it is infeasible and not estimated.
  const Program* add(Program p, uint64_t key, double guide_seconds, Clock::time_point build_start, bool twin,
                     double least_staging = 0) {
    ExtractStats& st = out_.stats;
    // Search candidates are de-duplicated by their keys (or not at all: mode
    // none); a twin equal to a kept candidate is dropped.
    if (reusing() && !programs_.insert(canonical_hash(p)).second && twin) {
      st.build_seconds += seconds_since(build_start);
      return nullptr;
    }
    LoweredProgram lowered;
    std::optional<std::string> why = check_candidate(p, opt_.limits, &lowered);
    st.build_seconds += seconds_since(build_start);
    if (why) {
      if (twin) return nullptr;  // a twin that has no kernel form is not a candidate; the original stays
      if (!st.invalid) st.first_invalid = *why;
      ++st.invalid;
      return nullptr;
    }
    ++(twin ? st.reuse_twins : st.distinct);
    if (opt_.cost && least_staging > double(opt_.cost->target().smem_bytes_per_program)) {
      ++st.staged_out;
      if (!st.infeasible)
        st.first_infeasible = "the loads of a kernel need at least " +
                              std::to_string(int64_t(std::ceil(least_staging / 1024))) +
                              " KiB of shared memory at any block sizes > " +
                              std::to_string(opt_.cost->target().smem_bytes_per_program / 1024) + " KiB";
      return drop_infeasible(std::move(p));
    }
    Candidate cand{std::move(p), std::move(lowered), key, std::nullopt, guide_seconds, acyclic_pass_};
    if (opt_.cost && (pruning() || opt_.max_candidates > 0)) {
      Clock::time_point estimate_start = Clock::now();
      cand.estimate = opt_.cost->estimate(cand.program, cand.lowered, estimates_);
      st.estimate_seconds += seconds_since(estimate_start);
      if (!cand.estimate->feasible) {
        if (!st.infeasible) st.first_infeasible = cand.estimate->why_infeasible;
        return drop_infeasible(std::move(cand.program));
      }
      // Twins bound the pruning but do not count toward max_candidates:
      // the search's own candidates keep their number.
      if (!twin) ++feasible_found_;
      best_.push(cand.estimate->seconds);
      if (best_.size() > opt_.prune_k) best_.pop();
    } else {
      if (!twin) ++feasible_found_;  // without a cost model every valid candidate counts
    }
    out_.candidates.push_back(std::move(cand));
    return &out_.candidates.back().program;
  }

  // Counts an infeasible candidate; its program stays until the next one,
  // for its twin.
  const Program* drop_infeasible(Program p) {
    ++out_.stats.infeasible;
    last_infeasible_ = std::move(p);
    return &last_infeasible_;
  }

  void rank() {
    if (!opt_.cost) return;
    std::vector<Candidate>& cs = out_.candidates;
    for (Candidate& c : cs)
      if (!c.estimate) c.estimate = opt_.cost->estimate(c.program, c.lowered, estimates_);
    size_t before = cs.size();
    if (out_.stats.first_infeasible.empty())  // else add() dropped one first
      for (const Candidate& c : cs)
        if (!c.estimate->feasible) {
          out_.stats.first_infeasible = c.estimate->why_infeasible;
          break;
        }
    // The feasible ones' indices are sorted, not the candidates: a Candidate
    // holds a program and its kernels, dear to move (each would move about
    // log n times).
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < cs.size(); ++i)
      if (cs[i].estimate->feasible) order.push_back(i);
    out_.stats.infeasible += before - order.size();  // add() counted those it estimated
    std::stable_sort(order.begin(), order.end(), [&](uint32_t i, uint32_t j) { return ranks_before(cs[i], cs[j]); });
    std::vector<Candidate> ranked;
    ranked.reserve(order.size());
    for (uint32_t i : order) ranked.push_back(std::move(cs[i]));
    cs = std::move(ranked);
    // The best stage count of each leading candidate. Its estimate can only
    // fall (the target's own count is among the choices), so the leaders
    // stay ahead of the rest; among themselves they are ranked again.
    const size_t top = std::min(cs.size(), opt_.stage_refine_top);
    if (opt_.separate_kernel_dims)
      for (size_t i = 0; i < top; ++i) separate_dims(cs[i]);
    if (top > 0 && opt_.cost->target().stage_choices.size() >= 2)
      for (size_t i = 0; i < top; ++i)
        cs[i].estimate = opt_.cost->best_stages(cs[i].program, cs[i].lowered, *cs[i].estimate);
    std::stable_sort(cs.begin(), cs.begin() + std::ptrdiff_t(top), ranks_before);
    // Where the leaders' GEMVs start tuning in their other form. It does not
    // rank them: which form is faster is measured.
    for (size_t i = 0; i < top; ++i) cs[i].gemv_dot = opt_.cost->gemv_dot_estimate(cs[i].program, cs[i].lowered);
  }

  // c with its kernel-private dims (extract/kernel_dims.h), when the cost
  // model prices that lower; it stays the same candidate (its key). The
  // estimate can only fall, so c stays ahead of the candidates after it.
  void separate_dims(Candidate& c) {
    std::optional<Program> q = separate_kernel_dims(c.program, c.lowered);
    if (!q) return;
    LoweredProgram lowered;
    if (check_candidate(*q, opt_.limits, &lowered)) return;
    ProgramEstimate e = opt_.cost->estimate(*q, lowered, estimates_);
    if (!e.feasible || e.seconds >= c.estimate->seconds) return;
    c.program = std::move(*q);
    c.lowered = std::move(lowered);
    c.estimate = std::move(e);
  }

  // The ranking (ExtractResult::candidates): by estimate, then the other
  // passes' candidates before the acyclic passes' (Candidate::acyclic_pass),
  // then by key.
  static bool ranks_before(const Candidate& a, const Candidate& b) {
    if (a.estimate->seconds != b.estimate->seconds) return a.estimate->seconds < b.estimate->seconds;
    if (a.acyclic_pass != b.acyclic_pass) return b.acyclic_pass;
    return a.key < b.key;
  }

  const EGraph& g_;
  std::vector<EClassId> roots_;
  std::span<const OutputDecl> outputs_;
  const ExtractOptions& opt_;
  OptionTable table_;
  Filler filler_;
  std::optional<CostGuide> guide_;  // best-first order only: the pass's pricing
  static constexpr uint64_t kMinComplementStates = 20000;
  uint64_t pass_states_ = std::numeric_limits<uint64_t>::max();  // this pass's share of states
  bool acyclic_pass_ = false;      // the pass running is an acyclic one (Candidate::acyclic_pass)
  uint64_t inherited_states_ = 0;  // states the inherited-weight passes expanded, all of them
  std::unordered_set<uint64_t> found_;  // keys of the candidates of earlier passes
  double time_share_ = 0;             // this pass's time limit
  // Whether this pass checks partial programs against shared memory: not,
  // until the first staged-out one (then met_staged_out_), or each one to
  // expand the staged-out ones last.
  enum class StagingWatch { Off, UntilFirst, Defer };
  StagingWatch staging_watch_ = StagingWatch::Off;
  bool met_staged_out_ = false;
  // A pass that has built kGiveWayBuilt candidates (none an earlier pass's)
  // with none feasible leaves its time and states to the passes after it.
  // The first pass keeps the staged-out partial programs in their order
  // (ngpt's best candidates are reuse twins of staged-out ones), so where
  // every program is staged out it built infeasible candidates until its
  // time was up: the sliding-window GQA layer's attention core, 660,000 in
  // 75 s of the CLI's 600, where the deferring pass then found 256 in 1 s;
  // it gives way only where that pass follows (it met a staged-out
  // program). On the whole attention-sinks layer (the H200's model) the
  // shared pricing built 634,000 in 75 s with none feasible, and the two
  // own-weight passes after it, given as many states, spent 60 s on dead
  // ends: 135 s, every candidate from the other passes.
  bool first_pass_ = false;
  static constexpr uint64_t kGiveWayBuilt = 4096;
  // Added to the price of a partial program some kernel of which cannot
  // stage its loads: far above any program's time, so it waits for the rest.
  static constexpr double kStagedOutPrice = 1e3;
  size_t feasible_found_ = 0;
  double output_bytes_ = 0;
  KeySet seen_, after_keys_;
  std::unordered_set<uint64_t> programs_;  // canonical hashes of the candidates kept (with reuse twins)
  Program last_infeasible_;                // the program of the last candidate add() dropped as infeasible
  std::priority_queue<double> best_;  // the k best feasible estimates (largest on top)
  CostModel::EstimateCache estimates_;  // kernel evaluations shared by the candidates' estimates
  ExtractResult out_;
};

}  // namespace

ExtractResult extract_candidates(const EGraph& g, std::span<const EClassId> roots,
                                 std::span<const OutputDecl> outputs, const ExtractOptions& options) {
  if (!g.clean()) throw Error("extraction needs a rebuilt e-graph (call rebuild() first)");
  if (roots.empty()) throw Error("extraction needs at least one result class");
  if (outputs.size() != roots.size())
    throw Error("extraction: " + std::to_string(roots.size()) + " result classes but " +
                std::to_string(outputs.size()) + " output declarations");
  for (size_t i = 0; i < roots.size(); ++i) {
    const Type& t = g.type(roots[i]).get();
    if (t.is_tuple || t.tensor().literal || !t.tensor().delta.empty())
      throw Error("extraction: output " + std::string(outputs[i].name.str()) + " has type " +
                  type_text(t, &g.dims()) + "; an output is a tensor with no parallel axes");
  }
  if (options.order == ExtractOrder::BestFirst && !options.cost)
    throw Error("extraction: best-first order needs a cost model (or choose breadth-first)");
  return Enumerator(g, roots, outputs, options).run();
}

}  // namespace eqf
