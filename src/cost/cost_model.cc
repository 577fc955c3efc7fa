// The optimistic latency bound (see eqiforge/cost/cost_model.h): evaluation
// of a summarized program at given block sizes, and its minimization over
// power-of-two choices.
#include "eqiforge/cost/cost_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>

#include "cost/index_mask.h"
#include "cost/kernel_tables.h"
#include "cost/summary.h"
#include "eqiforge/ir/diagnostic.h"

namespace eqf {
namespace {

using namespace cost;

double pow2_at_least(double x) {
  if (x <= 1) return 1;
  return double(std::bit_ceil(uint64_t(std::ceil(x))));
}

// visited_blocks walks every grid block, and the minimization asks again
// for each block-size choice of each candidate: extraction ranks thousands
// of candidates with the same causal mask. The answer depends only on the
// mask's content and the four sizes, which make the key.
double visited_blocks_memo(const LoopMask& mask, double T, double Bt, double S, double Bg) {
  thread_local std::unordered_map<std::string, double> memo;
  std::string key;
  auto put = [&](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(mask.grid_axis);
  for (const IndexPredicate& pr : mask.predicates) {
    put(pr.cmp);
    put(pr.constant);
    put(pr.terms.size());
    for (const IndexPredicate::Term& t : pr.terms) {
      put(t.role);
      put(t.coef);
      put(t.extent);
    }
  }
  put(T), put(Bt), put(S), put(Bg);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  if (memo.size() > (1u << 20)) memo.clear();  // bounded memory
  double v = visited_blocks(mask, T, Bt, S, Bg);
  memo.emplace(std::move(key), v);
  return v;
}

// Per-axis quantities at one block-size choice. Rows come parents first
// (summarize adds an axis after what it depends on), so one pass suffices.
struct Sizes {
  std::vector<double> block, size, local, coords;

  void compute(const ProgramSummary& s, const std::vector<int64_t>& choice) {
    size_t n = s.axes.size();
    block.resize(n), size.resize(n), local.resize(n), coords.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const AxisRow& r = s.axes[i];
      double sz = r.parent >= 0 ? local[size_t(r.parent)]
                                : r.collected_from >= 0 ? coords[size_t(r.collected_from)] : double(r.extent);
      double b = r.unit ? 1.0 : double(choice[i]);
      block[i] = b;
      size[i] = sz;
      local[i] = std::min(b, sz);
      coords[i] = std::ceil(sz / b);
    }
  }
  // Average valid elements of a dim per tile (exact totals over all tiles).
  double avg(const DimRef& d) const {
    switch (d.kind) {
      case DimRef::Kind::One: return 1;
      case DimRef::Kind::Fixed: return double(d.extent);
      case DimRef::Kind::Collected: return coords[size_t(d.axis)];
      case DimRef::Kind::Blocked: return size[size_t(d.axis)] / coords[size_t(d.axis)];
    }
    return 1;
  }
  // Elements of a dim in the tile the kernel allocates (powers of two).
  double padded(const DimRef& d) const {
    switch (d.kind) {
      case DimRef::Kind::One: return 1;
      case DimRef::Kind::Fixed: return pow2_at_least(double(d.extent));
      case DimRef::Kind::Collected: return pow2_at_least(coords[size_t(d.axis)]);
      case DimRef::Kind::Blocked: return pow2_at_least(local[size_t(d.axis)]);
    }
    return 1;
  }
  double avg(const Tile& t) const {
    double e = 1;
    for (const DimRef& d : t) e *= avg(d);
    return e;
  }
  // The emitter pads every dim of a dot's matrix, whole ones included, to
  // the smallest dot (a TILE constexpr of max(16, next_power_of_2(size))).
  // A tile of more dims reaches tl.dot flattened (dot_shape.h): its whole
  // dims stay as they are; blocked ones are k or a padded matrix dim.
  double padded_for_dot(const Tile& t, int min_dot) const {
    double e = 1;
    for (const DimRef& d : t) {
      bool pad = d.kind != DimRef::Kind::One && (t.size() == 2 || d.kind == DimRef::Kind::Blocked);
      e *= pad ? std::max(double(min_dot), padded(d)) : padded(d);
    }
    return e;
  }
  double padded(const Tile& t) const {
    double e = 1;
    for (const DimRef& d : t) e *= padded(d);
    return e;
  }
};

struct KernelEval {
  double programs = 0, bytes = 0, l2_bytes = 0, mma = 0, other = 0;
  double dram_time_bytes = 0;  // DRAM bytes, each divided by its access efficiency
  double regs = 0, smem = 0, max_tile = 0;
  double memory_s = 0, mma_s = 0, other_s = 0, latency_s = 0, seconds = 0;
  bool masked = false;
};

// How well loads whose rows hold `run` contiguous bytes use DRAM, relative
// to long rows, in a kernel with dots (its loads staged through shared
// memory). bench/calibrate_bw.py: tiles of 32 fp16 columns (64-byte rows)
// stream at 0.8-0.9 of 64-128 columns, as do bench/stream_forms' tl.dot
// forms on the H200; shorter runs are taken to lose more, down to a 32-byte
// sector per access.
//
// A kernel without dots loads into registers, and short rows cost it no
// DRAM bandwidth: the programs beside it (or its own next iteration) read
// the rest of each line while the line is in L2 (50 MiB on Hopper). On the
// H200 (bench/results/h200-2026-12-02-stream-forms, the FP multiply-and-sum
// form) 64-byte rows streamed 15 % faster than the streaming bound without
// any penalty, 128-byte rows as fast as it.
//
// In every kernel, a run shorter than a sector makes L2 move the whole
// sector: eval_kernel counts the rest against the L2 bandwidth.
constexpr double kSectorBytes = 32;

double dram_efficiency(double run, bool staged) {
  if (!staged || run >= 128) return 1.0;
  if (run >= 64) return 0.85 + 0.15 * (run - 64) / 64;
  if (run >= 32) return 0.6 + 0.25 * (run - 32) / 32;
  return std::max(0.25, 0.6 * run / 32);
}

// The pipelining depth at which Target::loop_iteration_s was measured.
constexpr double kLatencyDepth = 2;

// Triton stages in shared memory, and issues ahead, the loads of a loop
// that feed tl.dot; a kernel without dots multiplies and sums what one
// iteration loads (triton 3.6 compiled rmsnorm_swiglu_ffn b1's GEMV loop at
// tiles that 3 staged copies would not fit, and it streamed 0.7 TB/s). So
// only such kernels depend on the pipeline stages.
bool pipelines_loops(const KernelSummary& k) { return !k.dots.empty() && !k.loops.empty(); }

// `exec`, `depth`: scratch for the loops' execution counts and pipelining
// depths (the minimizer reuses them).
KernelEval eval_kernel(const KernelSummary& k, const Sizes& z, const Target& t, std::vector<double>& exec,
                       std::vector<double>& depth) {
  KernelEval e;
  e.programs = 1;
  for (int g : k.grid) e.programs *= z.coords[size_t(g)];
  exec.assign(k.loops.size(), 0.0);
  // Tiles of one loop a program keeps in flight: Triton's pipeliner issues
  // the loads of stages - 1 iterations ahead in an innermost loop (no more
  // than the loop has), and does not pipeline a loop that holds another.
  depth.assign(k.loops.size(), 0.0);
  for (const LoopRow& l : k.loops)
    if (l.parent >= 0) depth[size_t(l.parent)] = -1;  // holds a loop
  const bool pipelined = pipelines_loops(k);
  double acc_regs = 0;
  for (size_t i = 0; i < k.loops.size(); ++i) {
    const LoopRow& l = k.loops[i];
    double outer = l.parent < 0 ? e.programs : exec[size_t(l.parent)];
    double trips = z.coords[size_t(l.axis)];
    depth[i] = depth[i] < 0 || !pipelined ? 1.0 : std::max(1.0, std::min(double(t.pipeline_stages), trips) - 1);
    if (l.mask) {
      int g = l.mask->grid_axis;
      double S = g >= 0 ? z.size[size_t(g)] : 1, Bg = g >= 0 ? z.block[size_t(g)] : 1;
      double visited = visited_blocks_memo(*l.mask, z.size[size_t(l.axis)], z.block[size_t(l.axis)], S, Bg);
      trips = visited / (g >= 0 ? z.coords[size_t(g)] : 1.0);
      e.masked = true;
    }
    exec[i] = outer * trips;
    for (const Tile& acc : l.accumulators) {
      double el = z.padded(acc);
      acc_regs += 4 * el;
      e.other += exec[i] * l.combine_weight * el;
      e.max_tile = std::max(e.max_tile, el);
    }
  }
  auto times = [&](int scope) { return scope < 0 ? e.programs : exec[size_t(scope)]; };
  // A grid mask: the programs whose block the mask rules out read nothing.
  double live_programs = 1;
  if (k.grid_mask) {
    const size_t g = size_t(k.grid_mask_axis);
    live_programs = visited_blocks_memo(*k.grid_mask, z.size[g], z.block[g], 1, 1) / z.coords[g];
    e.masked = true;
  }
  double in_flight = 0;  // bytes of loop tiles one program keeps in flight (L2 re-reads included)
  double sector_waste = 0;  // bytes L2 moves past those read: the rest of short rows' sectors
  for (const LoadRow& ld : k.loads) {
    if (ld.dtype_bytes == 0) continue;  // an index, not a memory read
    double reads = live_programs * times(ld.scope) * z.avg(ld.tile) * ld.dtype_bytes;
    e.bytes += reads;
    // Re-reads (replicated axes) of a slice that fits in L2 -- what the
    // programs along the load's partitioned grid axes share -- come from L2.
    double repeats = 1, slices = 1;
    for (int a : ld.replicated) repeats *= z.coords[size_t(a)];
    for (int a : ld.partitioned_grid) slices *= z.coords[size_t(a)];
    double unique = reads / repeats;
    double from_dram = reads;
    if (repeats > 1 && unique / slices <= t.l2_reuse_bytes) {
      e.l2_bytes += reads - unique;
      from_dram = unique;
    }
    double run = ld.contiguous_known ? z.avg(ld.contiguous) * ld.dtype_bytes : 1e9;
    e.dram_time_bytes += from_dram / dram_efficiency(run, !k.dots.empty());
    if (run < kSectorBytes) sector_waste += reads * (kSectorBytes / run - 1);
    // Programs that read a tile at once also keep its re-reads in flight
    // (two programs splitting the rows of a weight stream it faster than
    // one: bench/results/h200-2026-12-02b-general, layernorm_gemm b16).
    if (ld.scope >= 0) in_flight += z.avg(ld.tile) * ld.dtype_bytes * depth[size_t(ld.scope)];
    double el = z.padded(ld.tile);
    // In a kernel with dots, a matrix tile may feed tl.dot, which pads each
    // blocked dim to the smallest dot in shared memory (a 4 x 4096 tile
    // occupies 16 x 4096; triton 3.6 refused such kernels as out of shared
    // memory where the unpadded count said they fit).
    double staged = !k.dots.empty() && ld.tile.size() >= 2 ? z.padded_for_dot(ld.tile, t.min_dot) : el;
    e.smem += staged * ld.dtype_bytes * (ld.scope >= 0 && pipelined ? t.pipeline_stages : 1);
    e.max_tile = std::max(e.max_tile, el);
  }
  double live = 0;
  for (const ComputeRow& c : k.computes) {
    double el = z.padded(c.tile);
    e.other += times(c.scope) * c.weight * el;
    live = std::max(live, 4 * el);
    e.max_tile = std::max(e.max_tile, el);
  }
  const double md = t.min_dot;
  for (const DotRow& d : k.dots) {
    double m = std::max(md, z.padded(d.rows)), kk = std::max(md, z.padded(d.k)), n = std::max(md, z.padded(d.cols));
    double flops = times(d.scope) * 2 * m * kk * n;
    (d.tensor_cores ? e.mma : e.other) += flops;
    live = std::max(live, 4 * m * n);
    // A dot on fewer rows than a warp-group MMA takes runs as mma.sync,
    // which reads both operand tiles from registers: they are live together
    // with the product. ptxas (bench/register_check.py, bench/results/
    // h100-2026-12-06-registers): a whole [2048, 16] weight tile into such a
    // dot on 16 rows (mHC's connection) spills at 4 warps, where the tiles
    // the other terms count fit.
    if (m < t.warp_group_rows) live = std::max(live, (m * kk + kk * n) * (d.tensor_cores ? 2 : 4) + 4 * m * n);
    e.max_tile = std::max(e.max_tile, std::max(m * n, std::max(m * kk, kk * n)));
  }
  for (const StoreRow& s : k.stores) {
    e.bytes += z.avg(s.whole) * s.dtype_bytes;
    e.dram_time_bytes += z.avg(s.whole) * s.dtype_bytes;
  }
  e.regs = acc_regs + live;

  double busy = std::min(e.programs, double(t.sms));
  double frac = busy / double(t.sms);
  double bw = std::min(t.kernel_bytes_per_s, busy * t.sm_bytes_per_s);
  // Little's law: a loop streams no faster than the bytes in flight over
  // the GPU allow (target.h); this replaces the per-program cap, which
  // holds only for the tiles it was measured with. Resident programs: as
  // many per SM as their shared memory lets, up to programs_per_sm.
  if (t.stream_half_bytes > 0 && in_flight > 0) {
    double per_sm = std::min(t.programs_per_sm, std::max(1.0, std::floor(double(t.smem_bytes_per_program) /
                                                                           std::max(e.smem, 1.0))));
    double flight = in_flight * std::min(e.programs, double(t.sms) * per_sm);
    bw = t.kernel_bytes_per_s * flight / (flight + t.stream_half_bytes);
  }
  // DRAM serves the bytes L2 does not; every byte passes through L2.
  e.memory_s = std::max(e.dram_time_bytes / bw, (e.bytes + sector_waste) / t.l2_bytes_per_s);
  e.mma_s = e.mma / (t.mma_flops_per_s * frac);
  e.other_s = e.other / (t.fp_flops_per_s * frac);
  // A program runs its loop iterations one after another, each waiting for
  // its loads (pipelining hides part of it): however few bytes a tiny block
  // moves, an iteration costs at least loop_iteration_s. Programs resident
  // together on an SM overlap their iterations; more programs than fit run
  // in waves.
  // Deeper pipelining overlaps more of each wait: an iteration of a loop
  // that keeps `depth` tiles in flight costs loop_iteration_s scaled by the
  // depth at which it was measured (two, at three stages) over its own
  // (bench/results/h200-2026-12-02e: a sweep of rmsnorm_swiglu_ffn b16, 128
  // iterations of 64-wide tiles at 5 stages in about 36 us).
  double iterations = 0;
  for (size_t i = 0; i < exec.size(); ++i) iterations += exec[i] * std::min(1.0, kLatencyDepth / depth[i]);
  iterations /= e.programs;
  double waves = std::ceil(e.programs / (double(t.sms) * t.programs_per_sm));
  e.latency_s = waves * iterations * t.loop_iteration_s;
  e.seconds = std::max({e.memory_s, e.mma_s, e.other_s, e.latency_s}) + t.launch_s;
  return e;
}

KernelEval eval_kernel(const KernelSummary& k, const Sizes& z, const Target& t) {
  std::vector<double> exec, depth;
  return eval_kernel(k, z, t, exec, depth);
}

// How far a kernel's tiles exceed the budgets (0 when they fit).
double overflow(const KernelEval& e, const Target& t) {
  double o = 0;
  o += std::max(0.0, e.regs / double(t.register_bytes_per_program) - 1);
  o += std::max(0.0, e.smem / double(t.smem_bytes_per_program) - 1);
  o += std::max(0.0, e.max_tile / double(t.max_tile_elements) - 1);
  return o;
}

std::string kib(double bytes) { return std::to_string(int64_t(std::ceil(bytes / 1024))) + " KiB"; }

std::string overflow_text(const std::string& kernel, const KernelEval& e, const Target& t) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (e.regs > double(t.register_bytes_per_program))
    add("registers " + kib(e.regs) + " > " + kib(double(t.register_bytes_per_program)));
  if (e.smem > double(t.smem_bytes_per_program))
    add("shared memory " + kib(e.smem) + " > " + kib(double(t.smem_bytes_per_program)));
  if (e.max_tile > double(t.max_tile_elements))
    add("a tile of " + std::to_string(int64_t(e.max_tile)) + " elements > " + std::to_string(t.max_tile_elements));
  return kernel + ": " + out;
}

class Minimizer {
 public:
  // `tables`: kernel evaluations kept from earlier choices and programs.
  Minimizer(const ProgramSummary& s, const Target& t, KernelTables& tables) : s_(s), t_(t) {
    const size_t n = s.axes.size();
    choice_.assign(n, 1);
    max_.assign(n, 1);
    for (size_t i = 0; i < n; ++i) {
      const AxisRow& r = s.axes[i];
      double m = r.parent >= 0 ? max_[size_t(r.parent)]
                               : r.collected_from >= 0 ? max_coords(size_t(r.collected_from)) : double(r.extent);
      max_[i] = pow2_at_least(m);
      if (!r.unit) free_.push_back(i);
    }
    std::vector<bool> free(n, false);
    for (size_t i : free_) free[i] = true;
    for (const KernelSummary& k : s.kernels) views_.push_back(tables.view(s, k, max_, free));
  }

  // The best choice: every combination when there are few, else coordinate
  // descent from a few starting points.
  std::vector<int64_t> run(double& tried) {
    double combos = 1;
    for (size_t i : free_) combos *= std::log2(max_[i]) + 1;
    best_ = std::numeric_limits<double>::infinity();
    if (combos <= 4096) {
      exhaustive(0);
    } else {
      for (double start : {16.0, 64.0, 256.0}) descend(start);
    }
    tried = tried_;
    return best_choice_.empty() ? choice_ : best_choice_;
  }

 private:
  double max_coords(size_t axis) const {
    // Coordinates of an axis are largest at block size 1: what it splits.
    const AxisRow& r = s_.axes[axis];
    if (r.parent >= 0) return max_[size_t(r.parent)];
    if (r.collected_from >= 0) return max_coords(size_t(r.collected_from));
    return double(r.extent);
  }

  // Inner levels never exceed their outer level's block.
  void normalize(std::vector<int64_t>& c) const {
    for (size_t i = 0; i < s_.axes.size(); ++i) {
      const AxisRow& r = s_.axes[i];
      if (r.parent >= 0) c[i] = std::min(c[i], c[size_t(r.parent)]);
    }
  }

  double objective(const std::vector<int64_t>& choice) {
    std::vector<int64_t>& c = normalized_;
    c = choice;
    normalize(c);
    ++tried_;
    log2_.resize(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      uint64_t b = uint64_t(c[i]);
      log2_[i] = b != 0 && (b & (b - 1)) == 0 ? std::countr_zero(b) : -1;
    }
    bool sized = false;  // z_ holds c's sizes (computed on the first kernel not memoized)
    double total = 0, over = 0;
    for (size_t ki = 0; ki < s_.kernels.size(); ++ki) {
      const KernelView& view = views_[ki];
      const size_t slot = view.table ? view.slot(log2_) : KernelView::kNone;
      if (slot != KernelView::kNone)
        if (const KernelValue* kept = view.table->find(slot)) {
          total += kept->seconds;
          over += kept->overflow;
          continue;
        }
      if (!sized) z_.compute(s_, c), sized = true;
      KernelEval e = eval_kernel(s_.kernels[ki], z_, t_, exec_, depth_);
      double o = overflow(e, t_);
      if (slot != KernelView::kNone) view.table->keep(slot, KernelValue{e.seconds, o});
      total += e.seconds;
      over += o;
    }
    // Infeasible choices rank after every feasible one, closest to fitting first.
    double v = over > 0 ? 1e9 * (1 + over) : total;
    if (v < best_) {
      best_ = v;
      best_choice_ = c;
    }
    return v;
  }

  void exhaustive(size_t i) {
    if (i == free_.size()) {
      objective(choice_);
      return;
    }
    // Largest blocks first: among equal estimates (tiny problems, where
    // the launch dominates) the first found, with the fewest programs, stays.
    size_t a = free_[i];
    for (double b = max_[a]; b >= 1; b /= 2) {
      choice_[a] = int64_t(b);
      exhaustive(i + 1);
    }
  }

  void descend(double start) {
    std::vector<int64_t> c = choice_;
    for (size_t a : free_) c[a] = int64_t(std::min(start, max_[a]));
    double cur = objective(c);
    for (int sweep = 0; sweep < 8; ++sweep) {
      bool improved = false;
      for (size_t a : free_) {
        int64_t keep = c[a];
        for (double b = 1; b <= max_[a]; b *= 2) {
          if (int64_t(b) == keep) continue;
          c[a] = int64_t(b);
          double v = objective(c);
          if (v < cur) {
            cur = v;
            keep = c[a];
            improved = true;
          }
        }
        c[a] = keep;
      }
      if (!improved) break;
    }
  }

  const ProgramSummary& s_;
  const Target& t_;
  std::vector<int64_t> choice_;
  std::vector<double> max_;
  std::vector<size_t> free_;
  std::vector<KernelView> views_;  // per kernel
  std::vector<int64_t> normalized_;
  std::vector<int> log2_;  // of normalized_'s sizes (-1: not a power of two)
  std::vector<double> exec_, depth_;
  Sizes z_;
  double best_ = 0;
  std::vector<int64_t> best_choice_;
  double tried_ = 0;
};

ProgramEstimate report(const ProgramSummary& s, const LoweredProgram& lp, const std::vector<int64_t>& choice,
                       const Target& t) {
  Sizes z;
  z.compute(s, choice);
  ProgramEstimate out;
  out.feasible = true;
  out.stages = t.pipeline_stages;
  for (size_t i = 0; i < s.axes.size(); ++i) out.blocks[s.axes[i].axis] = int64_t(z.block[i]);
  // The kernels of one launch level run in one launch (codegen's fused
  // kernels): only the first of each level pays the launch.
  const std::vector<int> level = launch_levels(lp);
  std::set<int> launched;
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const KernelSummary& k = s.kernels[ki];
    KernelEval e = eval_kernel(k, z, t);
    const bool pays_launch = launched.insert(level[ki]).second;
    if (!pays_launch) e.seconds -= t.launch_s;
    if (overflow(e, t) > 0) {
      out.feasible = false;
      out.why_infeasible += (out.why_infeasible.empty() ? "" : "; ") + overflow_text(k.name, e, t);
    }
    KernelEstimate ke;
    ke.name = k.name;
    ke.grid = lp.kernels[ki].grid;
    for (const Loop& l : lp.kernels[ki].loops) ke.loops.push_back(l.axis);
    ke.programs = e.programs;
    ke.bytes = e.bytes;
    ke.mma_flops = e.mma;
    ke.other_flops = e.other;
    ke.memory_s = e.memory_s;
    ke.mma_s = e.mma_s;
    ke.other_s = e.other_s;
    ke.launch_s = pays_launch ? t.launch_s : 0;
    ke.seconds = e.seconds;
    ke.masked = e.masked;
    ke.latency_s = e.latency_s;
    ke.register_bytes = e.regs;
    ke.smem_bytes = e.smem;
    double m = std::max({e.memory_s, e.mma_s, e.other_s, e.latency_s});
    ke.bound = m == 0                ? "launch"
               : m == e.memory_s   ? "memory"
               : m == e.mma_s      ? "mma"
               : m == e.other_s    ? "fp"
                                   : "latency";
    out.seconds += e.seconds;
    out.kernels.push_back(std::move(ke));
  }
  return out;
}

}  // namespace

ProgramEstimate CostModel::estimate(const Program& p) const { return estimate(p, lower_program(p)); }

ProgramEstimate CostModel::estimate(const Program& p, const LoweredProgram& lowered) const {
  EstimateCache once;
  return estimate(p, lowered, once);
}

struct CostModel::EstimateCache::Tables : cost::KernelTables {
  const CostModel* model = nullptr;  // whose target the values are for
};
CostModel::EstimateCache::EstimateCache() : tables_(std::make_unique<Tables>()) {}
CostModel::EstimateCache::~EstimateCache() = default;

namespace {

// The minimization of a summarized program for target `t`.
ProgramEstimate minimize(const ProgramSummary& s, const LoweredProgram& lowered, const Target& t,
                         KernelTables& tables) {
  tables.bound();
  Minimizer m(s, t, tables);
  double tried = 0;
  std::vector<int64_t> best = m.run(tried);
  ProgramEstimate out = report(s, lowered, best, t);
  out.combos_tried = tried;
  return out;
}

}  // namespace

ProgramEstimate CostModel::estimate(const Program& p, const LoweredProgram& lowered, EstimateCache& cache) const {
  if (cache.tables_->model != this) *cache.tables_ = {};  // another target's values
  cache.tables_->model = this;
  return minimize(summarize(p, lowered), lowered, target_, *cache.tables_);
}

ProgramEstimate CostModel::evaluate(const Program& p, const LoweredProgram& lowered, const BlockSizes& blocks) const {
  ProgramSummary s = summarize(p, lowered);
  std::vector<int64_t> choice(s.axes.size(), 1);
  std::string missing;
  for (size_t i = 0; i < s.axes.size(); ++i) {
    if (s.axes[i].unit) continue;
    auto it = blocks.find(s.axes[i].axis);
    if (it == blocks.end() || it->second < 1) {
      missing += (missing.empty() ? "" : " ") + s.axes[i].axis.name();
      continue;
    }
    choice[i] = it->second;
  }
  if (!missing.empty()) throw Error(p.file, {}, "cost model: no block size (at least 1) for axes " + missing);
  ProgramEstimate out = report(s, lowered, choice, target_);
  out.combos_tried = 1;
  return out;
}

namespace {

// The best of `at_default` and the minimizations of `s` at the target's other
// stage_choices.
ProgramEstimate best_over_stages(const ProgramSummary& s, const LoweredProgram& lowered, const Target& target,
                                 const ProgramEstimate& at_default) {
  ProgramEstimate best = at_default;
  if (std::none_of(s.kernels.begin(), s.kernels.end(), pipelines_loops)) return best;  // every count prices the same
  for (int stages : target.stage_choices) {
    if (stages == target.pipeline_stages) continue;
    Target t = target;
    t.pipeline_stages = stages;
    KernelTables tables;  // values for this count only
    ProgramEstimate e = minimize(s, lowered, t, tables);
    // Strictly faster only: among equal bounds the target's own count wins
    // (fewer stages where more buy nothing spend less shared memory).
    if (e.feasible && (!best.feasible || e.seconds < best.seconds)) best = std::move(e);
  }
  best.combos_tried = at_default.combos_tried;
  return best;
}

}  // namespace

ProgramEstimate CostModel::best_stages(const Program& p, const LoweredProgram& lowered,
                                       const ProgramEstimate& at_default) const {
  return best_over_stages(summarize(p, lowered), lowered, target_, at_default);
}

std::optional<ProgramEstimate> CostModel::gemv_dot_estimate(const Program& p, const LoweredProgram& lowered) const {
  const ProgramSummary s = summarize(p, lowered, /*gemv_dot=*/true);
  if (s.gemvs == 0) return std::nullopt;
  KernelTables tables;  // values of this form only
  ProgramEstimate e = minimize(s, lowered, target_, tables);
  if (target_.stage_choices.size() >= 2) e = best_over_stages(s, lowered, target_, e);
  if (!e.feasible) return std::nullopt;
  return e;
}

}  // namespace eqf
