// The cost guide of best-first extraction (see extract/guide.h).
#include "extract/guide.h"

#include "eqiforge/lower/kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace eqf::extract {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNominalBlock = 64;
// Every filling costs at least this much, so that a cycle of free fillings
// never looks cheapest and the fixpoint's choices stay acyclic; it also
// prefers fewer operators among equal prices.
constexpr double kEpsilon = 1e-12;

}  // namespace

CostGuide::CostGuide(const EGraph& g, OptionTable& table, const Target& target, GuidePricing pricing,
                     KernelWeight kernel_weight, Completion completion)
    : g_(g),
      table_(table),
      target_(target),
      pricing_(pricing),
      kernel_weight_(kernel_weight),
      completion_(kernel_weight == KernelWeight::Own ? completion : Completion::Apart),
      tracks_(kernel_weight == KernelWeight::Own ? kTracks : 1) {
  for (ENodeId n : g_.nodes_with_op(Op::TileMatMul)) {
    std::span<const EClassId> kids = g_.children(n);
    add_tile_matmul_unit_axes(g_.type(kids[0]).get().tensor(), g_.type(kids[1]).get().tensor(),
                              Symbol::from_raw(g_.attrs(n)[0]), &unit_axes_);
  }
}

double CostGuide::partial_price(const PartialProgram& s) {
  if (pricing_ == GuidePricing::Shared) return s.spent + remaining(s);
  double p = s.spent;
  for (const Hole& h : s.holes) p += to_go(EClassId(h.cls), h.req, h.weight, kernel_grid(table_, s, h.kernel));
  return p;
}

double CostGuide::child_weight(EClassId c, const Option& o, const std::vector<uint32_t>* grid) const {
  if (o.kernel_root) return slowdown(o);
  if (o.kind != Option::Kind::Chain || o.blocked || (grid && grid->empty())) return 1;
  EClassId bottom = o.children.front();
  if (table_.facts(bottom).global || table_.facts(bottom).literal) return 1;  // a load, priced as one
  const Type& top = g_.type(c).get();
  const Type& below = g_.type(bottom).get();
  if (top.is_tuple || below.is_tuple) return 1;
  double n = 1;
  for (const AxisState& as : top.tensor().delta) {
    if (as.state.kind != StateKind::Rep) continue;
    if (grid && std::find(grid->begin(), grid->end(), as.axis.pack()) == grid->end()) continue;
    bool below_has = std::any_of(below.tensor().delta.begin(), below.tensor().delta.end(),
                                 [&](const AxisState& b) { return b.axis == as.axis; });
    if (!below_has) n *= coords(as.axis);
  }
  return n;
}

double CostGuide::child_share(EClassId child, double weight) const {
  // A buffer (a global class: an input or another kernel's result) is
  // computed once, however many programs read it and however slowly.
  return table_.facts(child).global ? 1 : weight;
}

double CostGuide::slowdown(const Option& kernel_root) const {
  // The most programs the grid can have: blocks of the smallest dot (the
  // cost model may choose blocks that small to fill the SMs).
  // A unit axis (fixed to 1 by lowering) has one program per index.
  double programs = 1;
  for (uint32_t a : kernel_root.grid_axes) {
    Axis axis = Axis::unpack(a);
    double outer = axis.level == 0 ? extent(axis.dim) : block(Axis{axis.dim, uint8_t(axis.level - 1)});
    double smallest = unit_axes_.count(axis) ? 1 : double(target_.min_dot);
    programs *= std::max(1.0, std::ceil(outer / smallest));
  }
  double bw = std::min(target_.kernel_bytes_per_s, programs * target_.sm_bytes_per_s);
  return std::max(1.0, target_.kernel_bytes_per_s / bw);
}

double CostGuide::extent(Symbol dim) const {
  const DimInfo* info = g_.dims().find(dim);
  if (!info) return 1;
  if (info->collected_from) return coords(*info->collected_from);
  return double(std::max<int64_t>(info->extent, 1));
}

double CostGuide::block(Axis a) const {
  if (unit_axes_.count(a)) return 1;
  double outer = a.level == 0 ? extent(a.dim) : block(Axis{a.dim, uint8_t(a.level - 1)});
  double b = a.level == 0 ? kNominalBlock : std::floor(outer / 4);
  return std::clamp(b, 1.0, outer);
}

double CostGuide::coords(Axis a) const {
  double outer = a.level == 0 ? extent(a.dim) : block(Axis{a.dim, uint8_t(a.level - 1)});
  return std::ceil(outer / block(a));
}

// Whether axis state `as` holds a block of dim d (part(d) or local(d)).
static bool blocks(const AxisState& as, Symbol d) {
  return as.state.dim == d && (as.state.kind == StateKind::Part || as.state.kind == StateKind::Local);
}

double CostGuide::tile_elements(const TensorType& t) const {
  double n = 1;
  for (Symbol d : t.dims) {
    // The innermost axis blocking d sets its local extent.
    const Axis* inner = nullptr;
    for (const AxisState& as : t.delta)
      if (blocks(as, d) && (!inner || as.axis.level > inner->level))
        inner = &as.axis;
    n *= inner ? block(*inner) : extent(d);
  }
  return n;
}

double CostGuide::elements(const TensorType& t) const {
  if (t.literal) return 1;
  double n = tile_elements(t);
  for (const AxisState& as : t.delta) n *= coords(as.axis);
  return n;
}

double CostGuide::min_extent(const TensorType& t, Symbol d, double block_floor) const {
  bool blocked = false, unit = false;
  for (const AxisState& as : t.delta)
    if (blocks(as, d)) {
      blocked = true;
      unit = unit || unit_axes_.count(as.axis) > 0;  // fixed to 1, not padded to a dot
    }
  // A dot's tiles (block_floor > 1) pad every dim, whole ones included,
  // to a power of two of at least the smallest dot (codegen: TILE
  // constexprs); extent 1 is squeezed.
  double e = extent(d);
  if (unit || e == 1) return 1;
  if (block_floor > 1) return blocked ? block_floor : dot_extent(d, block_floor);
  return blocked ? std::min(block_floor, e) : e;
}

double CostGuide::dot_extent(Symbol d, double block_floor) const {
  return std::max(block_floor, std::exp2(std::ceil(std::log2(extent(d)))));
}

double CostGuide::min_elements(const TensorType& t, double block_floor) const {
  double n = 1;
  for (Symbol d : t.dims) n *= min_extent(t, d, block_floor);
  return n;
}

double CostGuide::elements(const Type& t) const {
  double n = 0;
  for (const TensorType& part : t.parts) n += elements(part);
  return n;
}

double CostGuide::compute_price(EClassId c, const Option& o, bool dot) const {
  const Type& out = g_.type(c).get();
  switch (o.op) {
    case Op::Input:
    case Op::Const:
    case Op::Iota:
    case Op::Tuple:
    case Op::Proj:
      return 0;
    case Op::Collect: {
      // A kernel of its own that stores every coordinate's value.
      double bytes = 0;
      for (const TensorType& part : out.parts) bytes += elements(part) * dtype_bytes(part.dtype);
      return target_.launch_s + bytes / target_.kernel_bytes_per_s;
    }
    case Op::TileMatMul: {
      const TensorType& a = g_.type(o.children[0]).get().tensor();
      Symbol k = Symbol::from_raw(g_.attrs(o.path.front())[0]);
      TensorType k_only;  // the local extent of k in operand a
      k_only.dims = {k};
      for (const AxisState& as : a.delta)
        if (as.state.dim == k) k_only.delta.push_back(as);
      double k_local = elements(k_only);
      for (const AxisState& as : k_only.delta) k_local /= coords(as.axis);
      double flops = 2 * elements(out) * k_local;
      bool tensor_cores = (a.dtype == DType::F16 || a.dtype == DType::BF16) && dot;
      return flops / (tensor_cores ? target_.mma_flops_per_s : target_.fp_flops_per_s);
    }
    default:
      break;
  }
  // Reductions (and preduce's combining) work on every element of their operand.
  double n = elements(out);
  if (op_has(o.op, kReduction) || o.op == Op::PReduce) n = elements(g_.type(o.children[0]).get());
  if (op_has(o.op, kContraction)) n *= 2;
  return n / target_.fp_flops_per_s;
}

double CostGuide::pressure_price(const TensorType& t) const {
  // The tile at nominal blocks against the registers: past them, the blocks
  // of this kernel must shrink, and every load it replicates is read that
  // many times more. Charged as re-reading the tile's own elements.
  double over = tile_elements(t) * 4 / double(target_.register_bytes_per_program);
  if (over <= 1) return 0;
  return over * elements(t) * 4 / target_.kernel_bytes_per_s;
}

bool CostGuide::fits(const TensorType& t, double element_bytes, int64_t budget, double block_floor) const {
  double n = min_elements(t, block_floor);
  return n * element_bytes <= double(budget) && n <= double(target_.max_tile_elements);
}

bool CostGuide::squeezed(const TensorType& t, Symbol d) const {
  // As lower/tile_view.cc sees it: a dim whose innermost blocking axis is a
  // unit axis, or of extent 1, is squeezed out of the tile.
  const Axis* inner = nullptr;
  for (const AxisState& as : t.delta)
    if (blocks(as, d) && (!inner || as.axis.level > inner->level)) inner = &as.axis;
  return (inner && unit_axes_.count(*inner)) || extent(d) == 1;
}

int CostGuide::live_dims(const TensorType& t) const {
  int live = 0;
  for (Symbol d : t.dims) live += squeezed(t, d) ? 0 : 1;
  return live;
}

bool CostGuide::is_dot(const Option& o) const {
  // The emitter's rule (cost/summary.cc: contraction): tl.dot for two 2-D
  // operand tiles sharing only k. Anything else -- a batch dim kept whole in
  // the tile -- is a broadcast product summed over k, on the FP units.
  const TensorType& a = g_.type(o.children[0]).get().tensor();
  const TensorType& b = g_.type(o.children[1]).get().tensor();
  Symbol k = Symbol::from_raw(g_.attrs(o.path.front())[0]);
  if (live_dims(a) != 2 || live_dims(b) != 2 || !a.has_dim(k) || !b.has_dim(k)) return false;
  for (Symbol d : a.dims)
    if (d != k && b.has_dim(d) && !squeezed(a, d)) return false;  // a shared dim left live
  return true;
}

TensorType CostGuide::product_tile(const Option& o) const {
  // The broadcast product of a non-dot tile_matmul: both operands' dims.
  TensorType u = g_.type(o.children[0]).get().tensor();
  const TensorType& b = g_.type(o.children[1]).get().tensor();
  for (Symbol d : b.dims)
    if (!u.has_dim(d)) u.dims.push_back(d);
  // An axis one operand replicates and the other partitions blocks the
  // product's dim (a's q replicated over the key blocks, b's keys split).
  for (const AxisState& as : b.delta) {
    auto same = std::find_if(u.delta.begin(), u.delta.end(), [&](const AxisState& x) { return x.axis == as.axis; });
    if (same == u.delta.end())
      u.delta.push_back(as);
    else if (same->state.kind == StateKind::Rep)
      *same = as;
  }
  return u;
}

bool CostGuide::dot_operands_fit(const Option& o) const {
  // tl.dot stages both operand tiles in shared memory at once, each padded
  // to the smallest dot: at the smallest blocks they must fit together.
  const double floor = double(target_.min_dot);
  const TensorType& a = g_.type(o.children[0]).get().tensor();
  const TensorType& b = g_.type(o.children[1]).get().tensor();
  const double bytes = min_elements(a, floor) * dtype_bytes(a.dtype) + min_elements(b, floor) * dtype_bytes(b.dtype);
  if (bytes > double(target_.smem_bytes_per_program)) return false;
  // On fewer rows than a warp-group MMA takes, the dot reads both operands
  // from registers, next to its fp32 product (cost/cost_model.cc): a whole
  // k of 2048 against 16 rows and 16 columns does not fit however the rest
  // is blocked. Only where no block sizes give it that many rows: else a
  // larger row block may make it a warp-group MMA that fits.
  Symbol k = Symbol::from_raw(g_.attrs(o.path.front())[0]);
  double rows = 1, most_rows = 1, cols = 1;
  for (Symbol d : a.dims) {
    if (d == k) continue;
    double least = min_extent(a, d, floor);
    rows *= least;
    most_rows *= least == 1 ? 1 : dot_extent(d, floor);  // the whole dim in one block
  }
  for (Symbol d : b.dims)
    if (d != k && !a.has_dim(d)) cols *= min_extent(b, d, floor);
  return most_rows >= target_.warp_group_rows ||
         bytes + 4 * rows * cols <= double(target_.register_bytes_per_program);
}

bool CostGuide::is_load(const Option& o) const {
  // A chain reads from a buffer (a global value, or the material bottom of a
  // partitioning chain); a replicate of a tile computed in the same kernel
  // is a broadcast in registers.
  return o.kind == Option::Kind::Chain && (o.blocked || table_.facts(o.children.front()).global);
}

const CostGuide::StagingFacts& CostGuide::staging(EClassId c, uint32_t option) {
  c = g_.find(c);
  if (staging_.size() <= c.v) staging_.resize(size_t(c.v) + 1);
  std::vector<StagingFacts>& fs = staging_[c.v];
  if (fs.empty()) {
    std::span<const Option> options = table_.options(c);
    fs.assign(options.size(), StagingFacts{});
    for (size_t i = 0; i < options.size(); ++i) {
      const Option& o = options[i];
      StagingFacts& f = fs[i];
      if (is_load(o)) {
        const TensorType& top = g_.type(c).get().tensor();
        const double b = dtype_bytes(top.dtype);
        f.bytes = min_elements(top) * b;
        f.dot_bytes = live_dims(top) >= 2 ? min_elements(top, double(target_.min_dot)) * b : f.bytes;
      } else if (o.kind == Option::Kind::Node && o.op == Op::TileMatMul) {
        f.dot = is_dot(o);
      }
    }
  }
  return fs[option];
}

double CostGuide::least_staging_bytes(const PartialProgram& s) {
  std::vector<KernelStaging>& ks = kernel_staging_;
  ks.clear();
  for (const Filled& f : s.filled) {
    if (f.kernel == kNoScope) continue;
    const StagingFacts& facts = staging(EClassId(f.cls), f.option);
    if (facts.bytes == 0 && !facts.dot) continue;
    auto k = std::find_if(ks.begin(), ks.end(), [&](const KernelStaging& x) { return x.kernel == f.kernel; });
    if (k == ks.end()) k = ks.insert(ks.end(), KernelStaging{f.kernel, 0, 0, false});
    k->bytes += facts.bytes;
    k->dot_bytes += facts.dot_bytes;
    k->dot = k->dot || facts.dot;
  }
  double most = 0;
  for (const KernelStaging& k : ks) most = std::max(most, k.dot ? k.dot_bytes : k.bytes);
  return most;
}

double CostGuide::price(EClassId c, uint32_t option) {
  c = g_.find(c);
  if (prices_.size() <= c.v) prices_.resize(size_t(c.v) + 1);
  std::vector<double>& ps = prices_[c.v];
  std::span<const Option> options = table_.options(c);
  if (ps.empty()) {
    ps.assign(options.size(), kInf);
    for (size_t i = 0; i < options.size(); ++i) {
      const Option& o = options[i];
      double p = kEpsilon;
      switch (o.kind) {
        case Option::Kind::Chain: {
          const TensorType& top = g_.type(c).get().tensor();
          if (is_load(o)) {
            if (!fits(top, dtype_bytes(top.dtype), target_.smem_bytes_per_program)) p = kInf;
            p += elements(top) * dtype_bytes(top.dtype) / target_.kernel_bytes_per_s;
          } else if (!fits(top, 4, target_.register_bytes_per_program)) {
            p = kInf;
          }
          break;
        }
        case Option::Kind::Grid: {
          const TensorType& t = g_.type(c).get().tensor();
          p += target_.launch_s + elements(t) * dtype_bytes(t.dtype) / target_.kernel_bytes_per_s;
          break;
        }
        case Option::Kind::Node: {
          const bool dot = o.op == Op::TileMatMul && is_dot(o);
          p += compute_price(c, o, dot);
          // A computed tile lives in registers (fp32); tl.dot pads its
          // blocks to the smallest dot.
          if (o.op == Op::TileMatMul) {
            if (dot) {
              if (!dot_operands_fit(o)) p = kInf;
            } else {
              // The product lives in registers before its sum: at nominal
              // blocks it is usually far past them, which forces tiny blocks.
              TensorType product = product_tile(o);
              if (!fits(product, 4, target_.register_bytes_per_program)) p = kInf;
              if (pricing_ == GuidePricing::Shared) p += pressure_price(product);
            }
          }
          if (!table_.facts(c).global && o.op != Op::Collect && o.op != Op::Tuple && o.op != Op::Proj) {
            double floor = dot ? double(target_.min_dot) : 1;
            for (const TensorType& part : g_.type(c).get().parts) {
              if (!fits(part, 4, target_.register_bytes_per_program, floor)) p = kInf;
              if (pricing_ == GuidePricing::Shared) p += pressure_price(part);
            }
            // A reduction holds its operand's tile (cost/summary.cc counts
            // it as the reduction's live tile): a whole row of 16 x 4096
            // loaded to be summed is past the registers however it is
            // blocked (ngpt: 2,900 of its candidates, each estimated to
            // learn it, before this).
            if (o.op == Op::Reduce)
              for (const TensorType& part : g_.type(o.children[0]).get().parts)
                if (!fits(part, 4, target_.register_bytes_per_program)) p = kInf;
          }
          break;
        }
      }
      ps[i] = p;
    }
  }
  return ps[option];
}

uint64_t CostGuide::axis_bits(const std::vector<uint32_t>& axes) const {
  uint64_t bits = 0;
  for (uint32_t a : axes) {
    auto it = std::lower_bound(loop_axes_.begin(), loop_axes_.end(), a);
    if (it != loop_axes_.end() && *it == a) bits |= uint64_t(1) << (it - loop_axes_.begin());
  }
  return bits;
}

bool CostGuide::forbidden(const Option& o, uint64_t ctx) const {
  if (!ctx || o.loop_axis == Option::kNoAxis) return false;
  auto it = std::lower_bound(loop_axes_.begin(), loop_axes_.end(), o.loop_axis);
  return it != loop_axes_.end() && *it == o.loop_axis && ((ctx >> (it - loop_axes_.begin())) & 1);
}

void CostGuide::find_loops() {
  std::span<const std::pair<EClassId, uint8_t>> pairs = table_.reached();
  std::vector<EClassId> classes;
  size_t size = 0;  // past every class reached and every child of its options
  loop_axes_.clear();
  for (auto [c, r] : pairs) {
    classes.push_back(c);
    size = std::max<size_t>(size, c.v + 1);
    for (const Option& o : table_.options(c)) {
      for (EClassId k : o.children) size = std::max<size_t>(size, k.v + 1);
      if (o.loop_axis != Option::kNoAxis) loop_axes_.push_back(o.loop_axis);
    }
  }
  std::sort(classes.begin(), classes.end(), [](EClassId a, EClassId b) { return a.v < b.v; });
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  std::sort(loop_axes_.begin(), loop_axes_.end());
  loop_axes_.erase(std::unique(loop_axes_.begin(), loop_axes_.end()), loop_axes_.end());
  if (loop_axes_.size() > 64) loop_axes_.resize(64);  // the rest forbid nothing: a lower price
  loops_below_.assign(size, 0);
  if (loop_axes_.empty()) return;
  // The least fixpoint: a class may reach the loop axes of its own options
  // and, but for kernel roots (whose bodies are another kernel), those that
  // their children may reach.
  for (bool changed = true; changed;) {
    changed = false;
    for (EClassId c : classes) {
      uint64_t bits = loops_below_[c.v];
      for (const Option& o : table_.options(c)) {
        if (o.loop_axis != Option::kNoAxis) bits |= axis_bits({o.loop_axis});
        if (o.kernel_root) continue;
        for (EClassId k : o.children) bits |= loops_below_[k.v];
      }
      if (bits != loops_below_[c.v]) loops_below_[c.v] = bits, changed = true;
    }
  }
}

void CostGuide::find_contexts() {
  // From every pair in context 0, then from each new one: the children of
  // an option in its parent's context, a kernel root's body in the context
  // of the root's grid (which a partial program that fills the root gives
  // it).
  contexted_.clear();
  context_index_.clear();
  if (loop_axes_.empty()) return;
  auto reach = [&](EClassId c, uint8_t r, uint64_t ctx) {
    for (const Option& o : table_.options(c)) {
      if (!table_.allowed(c, o, r) || forbidden(o, ctx)) continue;
      uint8_t cr = table_.child_req(o, r);
      uint64_t bits = o.kernel_root ? axis_bits(o.grid_axes) : ctx;
      for (EClassId k : o.children) {
        uint64_t kc = context(k, bits);
        if (kc && context_index_.emplace(ContextKey{uint64_t(k.v) * 16 + cr, kc}, uint32_t(contexted_.size())).second)
          contexted_.push_back(Contexted{k, cr, kc});
      }
    }
  };
  for (auto [c, r] : table_.reached()) reach(c, r, 0);
  for (size_t i = 0; i < contexted_.size(); ++i) reach(contexted_[i].cls, contexted_[i].req, contexted_[i].context);
}

const CostGuide::Go* CostGuide::tracks(EClassId c, uint8_t req, uint64_t ctx) const {
  size_t pair = size_t(g_.find(c).v) * 16 + req;
  if (!ctx) return pair * kTracks < go_.size() ? &go_[pair * kTracks] : nullptr;
  auto it = context_index_.find(ContextKey{pair, ctx});
  return it == context_index_.end() ? nullptr : &context_go_[size_t(it->second) * kTracks];
}

const CostGuide::Go* CostGuide::cheapest(EClassId c, uint8_t req, double weight, uint64_t ctx) const {
  const Go* go = tracks(c, req, ctx);
  if (!go) return nullptr;
  const Go* best = go;
  for (size_t t = 1; t < tracks_; ++t)
    if (go[t].at(weight) < best->at(weight)) best = &go[t];
  return best->option == kNoOption ? nullptr : best;
}

double CostGuide::to_go(EClassId c, uint8_t req, double weight, const std::vector<uint32_t>* grid) const {
  c = g_.find(c);
  const Go* g = cheapest(c, req, weight, grid ? context(c, axis_bits(*grid)) : 0);
  return g ? g->at(weight) : kInf;
}

double CostGuide::recompute_price(EClassId c, uint8_t req, double weight, const std::vector<uint32_t>* grid) const {
  if (!counts_kernels_once()) return to_go(c, req, weight, grid);
  c = g_.find(c);
  const Go* g = cheapest(c, req, weight, grid ? context(c, axis_bits(*grid)) : 0);
  return g ? g->a * weight : kInf;  // b: the kernels of their own below, and buffers
}

bool CostGuide::analyze(std::chrono::steady_clock::time_point deadline) {
  analyzed_ = true;
  std::span<const std::pair<EClassId, uint8_t>> pairs = table_.reached();
  size_t classes = 0;
  for (auto [c, r] : pairs) classes = std::max<size_t>(classes, c.v + 1);
  go_.assign(classes * 16 * kTracks, Go{});
  find_loops();
  find_contexts();
  context_go_.assign(contexted_.size() * kTracks, Go{});
  const bool tuple_max = pricing_ == GuidePricing::Shared;
  // Rounds over the pairs, every track in each, until no choice changes.
  // Each round chooses afresh from the children's current subprograms: a
  // child's choice at one weight may become dearer at another, so a price
  // kept from an earlier round could be too low. Choosing afresh can also
  // keep a cycle of fillings chosen while its price creeps up by kEpsilon a
  // round (it takes its own last price as its child's), so a price that
  // moved less than kSettled with the same option counts as settled --
  // relative to the price: a cycle's creep is multiplied by the weights
  // along it (32 on the heavy track), so a fixed tolerance let a price of
  // milliseconds creep past it for all 256 rounds (60 s for the
  // sliding-window layer, whose other passes settle in 14).
  // Choices settle after about as many rounds as the deepest cheapest
  // subprogram; kMaxRounds bounds the rest. Children are usually reached
  // after their parents, so rounds go backwards.
  constexpr int kMaxRounds = 256;
  constexpr double kSettled = 1e-10;  // seconds: 100 kEpsilon, far below any real price difference
  constexpr double kSettledRelative = 1e-5;  // 1.3 ns of a 130 us price: far below a real difference
  constexpr int kTieRounds = 32;
  // Past kTieRounds a price that moves less than 0.1 % a round is settled
  // too: cycles of fillings whose weights multiply along them creep by
  // ~4e-5 of their price a round (QK-norm MLA's attention subgraph: both
  // own-weight passes took all 256 rounds, 55 s each, past a 60 s limit).
  // The guide only orders the search; 0.1 % does not change that order.
  constexpr double kLooseRelative = 1e-3;
  auto settled = [](double was, double now, int round) {
    const double relative = round >= kTieRounds ? kLooseRelative : kSettledRelative;
    return was == now || std::abs(now - was) <= kSettled + relative * std::abs(now);
  };
  bool changed = true;
  for (int round = 0; changed && round < kMaxRounds; ++round) {
    if (round > 0 && std::chrono::steady_clock::now() > deadline) return false;
    changed = false;
    // Backwards: the pairs in a context (found below the others) first.
    for (size_t i = pairs.size() + contexted_.size(); i-- > 0;) {
      const size_t x = i - pairs.size();  // index in contexted_ (past the pairs)
      const bool in_context = i >= pairs.size();
      const EClassId c = in_context ? contexted_[x].cls : pairs[i].first;
      const uint8_t r = in_context ? contexted_[x].req : pairs[i].second;
      const uint64_t ctx = in_context ? contexted_[x].context : 0;
      Go* slots = in_context ? &context_go_[x * kTracks] : &go_[(size_t(c.v) * 16 + r) * kTracks];
      std::span<const Option> options = table_.options(c);
      for (size_t track = 0; track < tracks_; ++track) {
        const double at_weight = kTrackWeights[track];
        Go& kept = slots[track];
        Go best, again;  // again: the option kept from the last round, priced afresh
        for (uint32_t k = 0; k < options.size(); ++k) {
          const Option& o = options[k];
          if (!table_.allowed(c, o, r) || forbidden(o, ctx)) continue;
          uint8_t cr = table_.child_req(o, r);
          const uint64_t child_bits = o.kernel_root ? 0 : ctx;  // a body: context 0 (see guide.h)
          // The filling's price scales with its user's weight, unless it is a
          // kernel of its own (then only what its kernel's weight says).
          const bool own = own_root(o);
          Go next{own ? 0 : price(c, k), own ? price(c, k) : 0, k};
          // No kernel is known here: a replicate of a computed tile is taken to
          // be over grid axes (recomputed), the dearer case. Replicates over
          // loop axes are mostly of statistics computed before a loop (a second
          // pass), rarely the cheap choice anyway; partial programs correct it.
          const double weight = child_weight(c, o, nullptr);
          auto add = [&](EClassId child) {
            double share = child_share(child, weight);
            // Fixed with own kernel weights: a buffer (computed once), or
            // anything below a kernel root. Inherited weights scale it all.
            bool scales = kernel_weight_ == KernelWeight::Inherited || (!own && !table_.facts(child).global);
            const Go* g = cheapest(child, cr, scales ? at_weight * share : share, context(child, child_bits));
            if (!g) {
              next.b = kInf;
            } else if (scales) {
              next.a += share * g->a;
              next.b += g->b;
            } else {
              next.b += g->at(share);
            }
          };
          if (tuple_max && o.kind == Option::Kind::Node && o.op == Op::Tuple) {
            // A tuple costs its dearest part (the parts share their inputs).
            EClassId dearest = o.children.front();
            auto part_price = [&](EClassId child) {
              const Go* g = cheapest(child, cr, at_weight, context(child, child_bits));
              return g ? g->at(at_weight) : kInf;
            };
            double most = part_price(dearest);
            for (EClassId child : o.children)
              if (double p = part_price(child); p > most) dearest = child, most = p;
            add(dearest);
          } else {
            for (EClassId child : o.children) {
              add(child);
              if (k != kept.option && !(next.at(at_weight) < best.at(at_weight))) break;
            }
          }
          if (k == kept.option) again = next;
          if (next.at(at_weight) < best.at(at_weight)) best = next;
        }
        // Past kTieRounds, a tie within the tolerance keeps the option chosen
        // before: near-equal options whose prices creep could otherwise take
        // turns forever (the sliding-window layer's third pass took all 256
        // rounds, 60 s). Before, the first cheapest option wins, as it did
        // when every pass settled.
        if (round >= kTieRounds && best.option != kept.option && kept.option != kNoOption &&
            again.option == kept.option &&
            (again.at(at_weight) < best.at(at_weight) || settled(best.at(at_weight), again.at(at_weight), round)))
          best = again;
        const double was = kept.at(at_weight), now = best.at(at_weight);
        if (best.option != kept.option || !settled(was, now, round)) changed = true;
        kept = best;
      }
    }
  }
  return true;
}

// A hole's class, scope and requirement as one key (a collision only
// misprices a partial program: the guide orders the search, the cost model
// ranks what it finds).
static uint64_t hole_key(uint32_t cls, uint32_t scope, uint8_t req) {
  return ((uint64_t(cls) << 32) | scope) * 0x9E3779B97F4A7C15ull + req;
}

double CostGuide::joined_price(const PartialProgram& s, const Hole& h) {
  EClassId c(h.cls);
  std::span<const Option> options = table_.options(c);
  double best = kInf;
  for (uint32_t i = 0; i < options.size(); ++i) {
    const Option& o = options[i];
    if (o.kind != Option::Kind::Node || o.children.empty() || o.kernel_root || !table_.viable(c, o, h.req))
      continue;
    const uint32_t scope = scope_below(c, o, h.scope);
    const uint8_t req = table_.child_req(o, h.req);
    bool joined = std::all_of(o.children.begin(), o.children.end(), [&](EClassId k) {
      const Filled* f = s.find(k.v);
      return (f && f->scope == scope && f->req == req) || holes_.contains(hole_key(k.v, scope, req));
    });
    if (joined) best = std::min(best, filling_weight(h.weight, o) * price(c, i));
  }
  return best;
}

double CostGuide::remaining(const PartialProgram& s) {
  if (counts_kernels_once()) return program_remaining(s);
  push_holes(s);
  holes_.clear();
  const size_t holes = stack_.size();
  const bool joining = completion_ == Completion::Joined && holes > 1;
  if (joining)
    for (const Hole& h : s.holes) holes_.insert(hole_key(h.cls, h.scope, h.req));
  seen_.clear();
  double total = 0;
  while (!stack_.empty()) {
    const bool is_hole = stack_.size() <= holes;  // the first `holes` entries are s's holes
    const Pending top = stack_.back();
    stack_.pop_back();
    const Hole& h = top.hole;
    const uint64_t grid_bits = top.grid_bits;
    if (!seen_.insert((uint64_t(h.cls) << 32) | h.scope)) continue;
    if (const Filled* f = s.find(h.cls); f && f->scope == h.scope) continue;  // paid for
    // The subprogram cheapest at this use's weight.
    EClassId c(h.cls);
    const Go* go = cheapest(c, h.req, h.weight, context(c, grid_bits));
    if (!go) return kInf;
    // A hole that one filling joins to the rest of the program (both
    // components of flash-decoding's merge read one reduce, which is
    // another hole) costs that filling, where its cheapest subprogram on its
    // own would count a second kernel the program does not need.
    if (joining && is_hole) {
      double joined = joined_price(s, h);
      if (joined < go->at(h.weight)) {
        total += joined;
        continue;
      }
    }
    total += count_filling(top, go->option);
  }
  return total;
}

void CostGuide::push_holes(const PartialProgram& s) {
  stack_.clear();
  for (const Hole& h : s.holes) {
    const std::vector<uint32_t>* grid = kernel_grid(table_, s, h.kernel);
    stack_.push_back(Pending{h, grid, grid ? axis_bits(*grid) : 0});
  }
}

double CostGuide::count_filling(const Pending& p, uint32_t option, std::vector<Pending>& stack) {
  const Hole& h = p.hole;
  EClassId c(h.cls);
  const Option& o = table_.options(c)[option];
  const double used = filling_weight(h.weight, o);
  const uint8_t cr = table_.child_req(o, h.req);
  const uint32_t scope = scope_below(c, o, h.scope);
  const uint32_t kernel = o.kernel_root ? c.v : h.kernel;
  const std::vector<uint32_t>* child_grid = o.kernel_root ? &o.grid_axes : p.grid;
  const uint64_t child_bits = o.kernel_root ? 0 : p.grid_bits;  // as the fixpoint prices a body
  const double weight = used * (child_grid ? child_weight(c, o, child_grid) : 1);
  for (EClassId k : o.children)
    stack.push_back(Pending{Hole{k.v, cr, scope, kernel, child_share(k, weight)}, child_grid, child_bits, c.v});
  return used * price(c, option);
}

// ---- Completion::Acyclic, Program and Counted --------------------------------------------


bool CostGuide::closes_cycle(const PartialProgram& s, const Option& o, uint32_t hole) {
  for (EClassId k : o.children)
    if (s.find(k.v) && reaches(table_, s, k.v, hole, reach_stack_, reach_seen_)) return true;
  return false;
}

bool CostGuide::reads(const Option& o, uint32_t parent) {
  return std::any_of(o.children.begin(), o.children.end(), [&](EClassId k) { return k.v == parent; });
}

bool CostGuide::paid(const PartialProgram& s, EClassId k, uint32_t scope) const {
  if (const Filled* f = s.find(k.v))
    if (f->scope == scope || own_root(table_.options(k)[f->option])) return true;
  return joins() &&
         (counted_.contains((uint64_t(k.v) << 32) | scope) || counted_.contains((uint64_t(k.v) << 32) | kNoScope));
}

double CostGuide::filling_estimate(const PartialProgram& s, const Pending& p, uint32_t i, bool is_hole, double bound) {
  EClassId c(p.hole.cls);
  const Option& o = table_.options(c)[i];
  if (!table_.viable(c, o, p.hole.req) || forbidden(o, context(c, p.grid_bits)) || reads(o, p.parent)) return kInf;
  if (is_hole && closes_cycle(s, o, c.v)) return kInf;
  const double used = filling_weight(p.hole.weight, o);
  double total = used * price(c, i);
  const uint32_t scope = scope_below(c, o, p.hole.scope);
  const uint8_t req = table_.child_req(o, p.hole.req);
  const std::vector<uint32_t>* child_grid = o.kernel_root ? &o.grid_axes : p.grid;
  const uint64_t child_bits = o.kernel_root ? 0 : p.grid_bits;
  const double weight = used * (child_grid ? child_weight(c, o, child_grid) : 1);
  for (EClassId k : o.children) {
    if (!(total < bound)) return kInf;
    if (paid(s, k, scope)) continue;
    const double w = child_share(k, weight);
    const Go* go = cheapest(k, req, w, context(k, child_bits));
    total += go ? go->at(w) : kInf;
  }
  return total < bound ? total : kInf;
}

CostGuide::Filling CostGuide::least_filling(const PartialProgram& s, const Pending& p, bool is_hole) {
  Filling best;
  const size_t n = table_.options(EClassId(p.hole.cls)).size();
  for (uint32_t i = 0; i < n; ++i) {
    const double total = filling_estimate(s, p, i, is_hole, best.price);
    if (total < best.price) best = Filling{i, total};
  }
  return best;
}

double CostGuide::program_remaining(const PartialProgram& s) {
  push_holes(s);
  const size_t holes = stack_.size();
  const bool join = joins();
  if (join && holes > 1) {
    // The dearest hole first: the others join what it counts (the state an
    // attention with a sink's three outputs read) instead of each counting
    // a cheaper kernel of its own.
    hole_price_.clear();
    for (const Pending& p : stack_) hole_price_.push_back(to_go(EClassId(p.hole.cls), p.hole.req, p.hole.weight, p.grid));
    holes_first_.assign(stack_.begin(), stack_.end());
    std::vector<uint32_t>& order = hole_order_;
    order.resize(holes);
    for (uint32_t i = 0; i < holes; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return hole_price_[a] < hole_price_[b]; });
    for (uint32_t i = 0; i < holes; ++i) stack_[i] = holes_first_[order[i]];
  }
  if (completion_ != Completion::Counted || holes < 2) return count_program(s, holes, kNoOption);
  // The first hole's filling decides what the others can join: a filling
  // that is cheapest on its own (P.V in a kernel of its own) can leave the
  // other holes to read the keys again each, where the fused state that
  // costs as much on its own serves them all. So each of the first hole's
  // fillings near the least (hole_filling's range) is tried with the whole
  // count, and the least count is the price.
  holes_first_.assign(stack_.begin(), stack_.end());
  const Pending first = stack_.back();
  counted_.clear();  // no hole counted yet: near_fillings asks what is paid for
  near_fillings(s, first);
  first_fillings_.assign(trial_fillings_.begin(), trial_fillings_.end());
  if (first_fillings_.size() < 2) return count_program(s, holes, kNoOption);
  double least = kInf;
  for (const Filling& f : first_fillings_) {
    stack_.assign(holes_first_.begin(), holes_first_.end());
    least = std::min(least, count_program(s, holes, f.option, least));
  }
  return least;
}

double CostGuide::count_program(const PartialProgram& s, size_t holes, uint32_t first_option, double bound) {
  const bool join = joins();
  seen_.clear();
  counted_.clear();
  counting_.clear();
  double total = 0;
  uint32_t forced = first_option;
  while (!stack_.empty()) {
    if (!(total < bound)) return kInf;
    const Pending top = stack_.back();
    stack_.pop_back();
    // One of s's holes. (The program completion takes the first class
    // below a filling of one child for a hole too, and its count joins what
    // was counted above it; its candidates were found so, nGPT b1's best
    // among them: 21.95 us on the H200's model, 24.75 without.)
    const bool is_hole = completion_ == Completion::Counted ? top.parent == kNoScope : stack_.size() + 1 <= holes;
    if (join && is_hole) {
      for (uint64_t key : counting_) counted_.insert(key);
      counting_.clear();
    }
    if (!count_pending(s, top, is_hole, /*trial=*/false, total, forced)) return kInf;
    forced = kNoOption;
  }
  return total;
}

bool CostGuide::count_pending(const PartialProgram& s, const Pending& top, bool is_hole, bool trial, double& total,
                              uint32_t forced) {
  const bool join = joins();
  const auto& [h, grid, grid_bits, parent] = top;
  // A trial leaves seen_ as it is: what it counts goes to trial_seen_.
  auto first_time = [&](uint64_t key) {
    if (!trial) return seen_.insert(key);
    return !seen_.contains(key) && trial_seen_.insert(key);
  };
  const uint64_t key = (uint64_t(h.cls) << 32) | h.scope;
  if (!first_time(key)) return true;
  if (join && !trial) counting_.push_back(key);
  if (const Filled* f = s.find(h.cls); f && f->scope == h.scope) return true;  // paid for
  EClassId c(h.cls);
  const Go* go = cheapest(c, h.req, h.weight, context(c, grid_bits));
  if (!go) return false;
  uint32_t best = go->option;
  const Option& cheapest_option = table_.options(c)[best];
  const bool cyclic = reads(cheapest_option, parent) || (is_hole && closes_cycle(s, cheapest_option, c.v));
  if (forced != kNoOption) {
    best = forced;
  } else if (completion_ == Completion::Counted && is_hole) {
    best = hole_filling(s, top);
    if (best == kNoOption) return false;  // every filling closes a cycle: a dead end
  } else if (join || cyclic) {
    const Filling least = least_filling(s, top, is_hole);
    if (least.option != kNoOption) {
      if (cyclic || least.price < go->at(h.weight)) best = least.option;
    } else if (is_hole) {
      return false;  // every filling closes a cycle: a dead end
    }
  }
  // A kernel of its own is computed once, whatever scopes read it.
  if (own_root(table_.options(c)[best])) {
    if (kernel_counted(s, c, best)) return true;
    const uint64_t once = (uint64_t(h.cls) << 32) | kNoScope;
    if (!first_time(once)) return true;  // a trial counted it already
    if (join && !trial) counting_.push_back(once);
  }
  total += count_filling(top, best, trial ? trial_stack_ : stack_);
  return true;
}

bool CostGuide::kernel_counted(const PartialProgram& s, EClassId c, uint32_t option) const {
  const Filled* f = s.find(c.v);
  return (f && f->option == option) || seen_.contains((uint64_t(c.v) << 32) | kNoScope);
}

void CostGuide::near_fillings(const PartialProgram& s, const Pending& hole) {
  EClassId c(hole.hole.cls);
  const size_t options = table_.options(c).size();
  trial_fillings_.clear();
  for (uint32_t i = 0; i < options; ++i) {
    const double e = filling_estimate(s, hole, i, /*is_hole=*/true, kInf);
    if (e < kInf) trial_fillings_.push_back(Filling{i, e});
  }
  std::stable_sort(trial_fillings_.begin(), trial_fillings_.end(),
                   [](const Filling& a, const Filling& b) { return a.price < b.price; });
  size_t n = std::min(trial_fillings_.size(), kTrialFillings);
  while (n > 1 && trial_fillings_[n - 1].price > trial_fillings_[0].price * kTrialRange) --n;
  trial_fillings_.resize(n);
}

uint32_t CostGuide::hole_filling(const PartialProgram& s, const Pending& hole) {
  // Those near the least estimate are counted as the completion would count
  // them, and the least count wins. The estimate takes each child's
  // cheapest subprogram, whose shared price a fused tuple makes optimistic
  // (a tuple at its dearest part); counted, its parts may be separate loops.
  // On attention with a sink at an H100's bandwidth, a loop over the keys
  // inside an output kernel looked cheaper than flash-decoding's state
  // (27.4 against 29.3 us) and counted 48: the partial programs on the path
  // to the best candidate were priced up to 2.5x its price, past every
  // candidate the pass found before its share ran out.
  near_fillings(s, hole);
  if (trial_fillings_.empty()) return kNoOption;
  const size_t n = trial_fillings_.size();
  if (n == 1) return trial_fillings_[0].option;
  EClassId c(hole.hole.cls);
  std::span<const Option> options = table_.options(c);
  Filling best;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t option = trial_fillings_[i].option;
    trial_seen_.clear();
    trial_stack_.clear();
    double counted = 0;
    bool ok = true;
    if (!own_root(options[option]) || !kernel_counted(s, c, option)) counted = count_filling(hole, option, trial_stack_);
    while (ok && !trial_stack_.empty() && counted < best.price) {
      const Pending p = trial_stack_.back();
      trial_stack_.pop_back();
      ok = count_pending(s, p, /*is_hole=*/false, /*trial=*/true, counted);
    }
    if (ok && counted < best.price) best = Filling{option, counted};
  }
  return best.option != kNoOption ? best.option : trial_fillings_[0].option;
}

}  // namespace eqf::extract
