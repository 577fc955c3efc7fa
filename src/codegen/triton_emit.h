// Internal to the Triton emitter: tile values, the kernel emitter that op
// emitters write through, and the op emitter table.
//
// Tiles in an emitted kernel are Triton tensors whose axes are the value's
// tile dims (DimView, squeezed ones left out) in the dim table's declaration
// order. Broadcasting is by name: an operand is expanded with `[:, None]`
// indexing to the dims of the result, so every op emitter works on named dims
// and never on positions.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "codegen/py_names.h"
#include "eqiforge/codegen/code_writer.h"
#include "eqiforge/ir/fold.h"
#include "eqiforge/codegen/triton.h"
#include "eqiforge/lower/kernel.h"

namespace eqf::codegen {

// Python operator precedence, loosest first; an operand looser than its
// context is parenthesized.
enum Prec : int { kCmp = 1, kOr = 2, kAnd = 3, kSum = 4, kProduct = 5, kUnary = 6, kAtom = 9 };

struct Expr {
  std::string text;
  int prec = kAtom;
};

// A tile value in a kernel.
struct Value {
  Expr expr;
  std::vector<DimView> dims;  // tile dims in kernel order, squeezed dims left out
  DType dtype = DType::F32;   // the Triton element type of expr
  bool literal = false;       // a Python float constant
  // Exactly 0 at every padded position (a masked load with other=0, and
  // products and sums of such): reductions and contractions over its dims
  // need no extra mask.
  bool zero_padded = false;
};

// A node's value: one part for a tensor, n for a tuple.
struct TileTuple {
  std::vector<Value> parts;
};

// Statements of one scope: offsets and masks first, then the body; a loop is
// a header line with a nested block.
struct StmtBlock {
  struct Stmt {
    std::string text;
    std::unique_ptr<StmtBlock> nested;
  };
  std::vector<std::string> prologue;
  std::vector<Stmt> body;
};

// The least size of a tile: a tl.dot operand's dims are at least 16; a
// GEMV's are only when the GEMV_DOT constexpr makes it a tl.dot.
enum class TilePad : uint8_t { None, GemvDot, Dot };

// Names shared by a module: its kernels' parameter names for buffers, dims
// and axes (the host function uses the same ones on the launching side).
// Every name comes from one table, so two different dims or axes never share
// one: dims k1 and k give TILE_K1 for all of k1 and, for a block of k.1,
// TILE_K1_2 (whichever is asked for second gets the suffix).
class ModuleNames {
 public:
  std::vector<std::string> buffer;  // Python name of each buffer (host variable)
  std::string ptr(int b) const { return buffer[size_t(b)] + "_ptr"; }
  const std::string& stride(int b, Symbol d) const;
  const std::string& extent(Symbol d) const;
  const std::string& block(Axis a) const;
  const std::string& count(Axis a) const;        // host: coordinates of a
  const std::string& block_param(Axis a) const;  // the tuner's keyword for a's block
  // EVEN_T0: true when the blocks of a tile its dim exactly (the block divides
  // the extent and is the tile's own size), so a's masks hold everywhere.
  const std::string& even(Axis a) const;
  // TILE_K for the whole dim k, TILE_K0 for a block of k.0, ...
  const std::string& tile(const DimView& v) const;
  // GRID_N0: a fused launch's constexpr for the number of coordinates of a.
  const std::string& grid_count(Axis a) const;
  // A fused launch's tile constexpr of view v at least size `pad` (TILE_E_DOT),
  // for a member that pads v otherwise than the launch's first member does;
  // and the EVEN_ flag of axis a computed with that size (EVEN_K0_DOT).
  const std::string& tile_alias(const DimView& v, TilePad pad) const;
  const std::string& even_alias(Axis a, TilePad pad) const;

 private:
  enum class Kind : uint8_t { Stride, Extent, Block, Count, BlockParam, Even, Tile, GridCount, TileAlias, EvenAlias };
  const std::string& named(Kind kind, uint32_t a, uint32_t b, const std::string& hint) const;
  mutable std::map<std::tuple<Kind, uint32_t, uint32_t>, std::string> names_;
  mutable NameTable table_;
};

// A kernel's signature, as found while emitting its body.
struct KernelSignature {
  std::vector<int> buffers;                 // pointer arguments, first use first
  std::map<int, std::set<Symbol>> strides;  // buffer -> dims whose stride is read
  std::set<Symbol> extents;
  std::set<Axis> blocks;
  std::set<Axis> evens;                            // axes whose EVEN_ constexpr a mask reads
  std::map<std::pair<uint32_t, int>, TilePad> tiles;  // (dim, depth) -> its least size
  bool input_precision = false;
  bool gemv_dot = false;  // a GEMV_DOT constexpr picks a contraction's form (contract in triton_ops.cc)
  // A fused launch's tile constexprs for members that pad a view otherwise
  // than its first member (name, (dim, depth), least size), and the EVEN_
  // flags computed with them (name, axis, its tile's least size).
  std::vector<std::tuple<std::string, std::pair<uint32_t, int>, TilePad>> tile_aliases;
  std::vector<std::tuple<std::string, Axis, TilePad>> even_aliases;
};

class KernelEmitter {
 public:
  // `reserved`: local names the kernel must not use (those of the kernels
  // before it in one fused launch, whose bodies share its Python scope).
  KernelEmitter(const Program& p, const LoweredProgram& lp, int kernel, const ModuleNames& names,
                const NameTable* reserved = nullptr);

  // The expression of each grid axis's coordinate, in grid order; by default
  // tl.program_id(i). Set before anything is emitted.
  void set_program_ids(std::vector<std::string> exprs) { program_ids_ = std::move(exprs); }
  // Other names for tile constexprs (by (dim, depth)) and EVEN_ flags (by
  // axis): a member of a fused launch whose tiles are padded otherwise than
  // the launch's first member's. Set before anything is emitted.
  void set_aliases(std::map<std::pair<uint32_t, int>, std::string> tiles, std::map<Axis, std::string> evens) {
    tile_aliases_ = std::move(tiles);
    even_aliases_ = std::move(evens);
  }
  // Emits the body into the emitter's statements and finds the signature
  // (once; write and write_body call it).
  void build();
  // Emits the whole kernel (decorator, signature, body).
  void write(CodeWriter& w);
  // Only the body's statements, at the writer's depth: a branch of a fused launch.
  void write_body(CodeWriter& w);
  const KernelSignature& signature() const { return sig_; }  // after build()
  const NameTable& locals() const { return locals_; }

  // ---- for op emitters ---------------------------------------------------
  const Program& program() const { return p_; }
  [[noreturn]] void fail(NodeId n, const std::string& why) const;

  // Values.
  Value literal(double v) const;
  Value to_float(const Value& v) const;  // f32 (f64 stays f64); literals unchanged
  Expr expand(const Value& v, const std::vector<DimView>& to) const;
  std::vector<DimView> union_dims(std::span<const Value* const> values) const;
  // Pointwise building blocks; operands broadcast by dim name.
  Value binary(const Value& a, std::string_view op, int prec, const Value& b) const;
  Value compare(const Value& a, std::string_view op, const Value& b) const;
  Value call(std::string_view fn, std::span<const Value* const> args, bool float_args = true) const;
  Value call(std::string_view fn, const Value& a) const {
    const Value* args[] = {&a};
    return call(fn, args);
  }
  Value call(std::string_view fn, const Value& a, const Value& b) const {
    const Value* args[] = {&a, &b};
    return call(fn, args);
  }
  Value where(const Value& c, const Value& a, const Value& b) const;
  // v with the positions of d past its extent (or block) set to `identity`;
  // v itself when it is already zero there and identity is 0. For a squeezed
  // d (one position) the position's own validity, when it can be invalid.
  Value masked(const Value& v, const DimView& d, double identity);
  // How dim d appears in node n's tiles.
  DimView view_of(NodeId n, Symbol d) const;
  // The value of an operand node as its user's emitter receives it (a literal
  // for a constant).
  TileTuple operand(NodeId c) const;
  // A value used more than once: a variable (assigned here when v is an expression).
  Value bind(const Value& v, std::string_view hint);
  // Reduces dim d of v: tl.sum / tl.max over its axis, padding masked.
  Value reduce_dim(const Value& v, const DimView& d, RedBase base);

  // Tiles and constexprs.
  std::string tile(const DimView& v);  // the TILE_ constexpr of a view
  void dot_dim(const DimView& v);      // pads the view's tile to at least 16
  void gemv_dot_dim(const DimView& v); // the same, only where GEMV_DOT holds
  std::string input_precision();       // the INPUT_PRECISION constexpr
  std::string gemv_dot();              // the GEMV_DOT constexpr

  void stmt(const std::string& line);  // a statement in the current scope
  // A name for values the current node's emitter binds (its let name, or one
  // from its op).
  const std::string& hint() const { return hint_; }

 private:
  struct Coord {
    std::string expr;   // pid_t0 or t0
    std::string block;  // BLOCK_T0, or 1 for a unit axis
  };
  using ViewKey = std::pair<uint32_t, int>;  // (dim, depth)
  static ViewKey view_key(const DimView& v) { return {v.dim.raw(), v.depth}; }

  // Scopes.
  int parent(int scope) const { return scope < 0 ? -2 : kernel_.loops[size_t(scope)].parent; }
  std::vector<int> chain() const;  // current scope, its parent, ..., -1
  StmtBlock& block(int scope) { return *blocks_.at(scope); }
  Coord coord(Axis a) const;
  int defining_scope(const DimView& v) const;

  // Offsets (global index) and masks of a view, defined once per scope.
  struct Index {
    std::string offs;  // variable name; "0" for an index that is always 0
    std::string mask;  // variable name; empty when every position is valid
    bool scalar = false;
  };
  const Index& index(const DimView& v);
  Expr offs_expr(const DimView& v, const std::vector<DimView>& to);  // expanded
  // The AND of the masks of `views` (non-squeezed ones expanded to `to`); empty if none.
  std::string mask_expr(const std::vector<DimView>& views, const std::vector<DimView>& to);

  void emit_block(const Block& b, int scope);
  void emit_compute(NodeId n, int scope);
  void emit_load(const Load& ld, int scope);
  void emit_loop(int loop_index, int scope);
  // The block range a loop over a masked key axis must visit (loop bounds
  // from index masks, triton_loop_bounds.cc): Python expressions for the first
  // block and one past the last, given the unbounded block count. nullopt
  // when the loop has no mask that provably lets it skip blocks.
  struct LoopRange {
    std::string lo, hi;
    std::string mask_name;  // the mask's let name, for the comment
    // The blocks from full_lo to one before full_hi (within lo..hi), on which
    // each `holds` where takes its non-literal branch at every position of
    // the tile: emitted without those wheres. Empty when there are none.
    std::string full_lo, full_hi;
    std::map<uint32_t, int> holds;  // where node -> the child it takes there
  };
  std::optional<LoopRange> masked_range(int loop_index, const std::string& count, const std::string& step);
  // A grid index mask (cost/index_mask.h): a Python expression that is false
  // in the programs whose block the mask rules out, where every load is
  // masked off (they store constants); empty when the kernel has none.
  std::string grid_live();
  std::string live_;  // its variable, once bound at the top
  void emit_merge(const Loop& loop, const std::vector<Value>& acc, const std::vector<Value>& blk);
  // The max components of a loop's state whose exp-sum terms can be computed
  // against the running max instead of the block's (triton_running_max.cc).
  std::vector<size_t> running_max_components(int loop_index) const;
  // A block max shifted to the running max: found in emit_loop, emitted where
  // the block max is computed (m_new = max(state, block max); m_use = m_new,
  // 0 where it is -inf), merged in emit_merge.
  struct Shift {
    int loop = -1;
    Value acc;           // the max component's accumulator
    Value m_new, m_use;  // set once emitted
    bool emitted = false;
  };
  std::map<uint32_t, Shift> shifts_;  // block-max node -> its shift
  // Wheres that take one branch on every block of the loop being emitted
  // (LoopRange::holds): their value is that branch's.
  std::map<uint32_t, int> holds_;
  // Emits one pass of loop li over `range`: the body, then the merge into acc.
  void emit_loop_pass(int li, int scope, const std::string& var, const std::string& range,
                      const std::vector<Value>& acc, const std::string& comment);
  void emit_store(const Store& st);
  Value load_part(const Load& ld, int part, const std::string& name);
  std::string address(int b, const Buffer& buf, const std::map<Symbol, Expr>& idx, NodeId at);

  const TileTuple& value_of(NodeId n) const;
  void set_value(NodeId n, int scope, TileTuple v) { values_[{n.v, scope}] = std::move(v); }
  std::string var_hint(NodeId n) const;
  std::vector<DimView> tile_dims(const TensorType& t) const;  // non-squeezed views
  std::vector<DimView> all_views(const TensorType& t) const;  // squeezed ones too

  void use_buffer(int b);
  std::string stride(int b, Symbol d);
  std::string extent(Symbol d);

  const Program& p_;
  const LoweredProgram& lp_;
  const Kernel& kernel_;
  const ModuleNames& names_;
  NameTable locals_;
  KernelSignature sig_;
  bool built_ = false;
  std::vector<std::string> program_ids_;
  std::map<std::pair<uint32_t, int>, std::string> tile_aliases_;
  std::map<Axis, std::string> even_aliases_;

  int current_ = -1;
  std::string hint_;
  std::map<int, std::string> loop_vars_;  // loop index -> its coordinate variable
  std::map<Axis, std::string> pids_;      // grid axis -> its program_id variable
  std::map<int, StmtBlock*> blocks_;
  StmtBlock top_;
  std::map<std::pair<uint32_t, int>, TileTuple> values_;
  std::map<std::pair<ViewKey, int>, Index> indices_;
  std::map<uint32_t, int> uses_;       // node -> number of uses in this kernel
  std::map<uint32_t, int> use_scope_;  // node -> scope of (one of) its uses
  std::map<uint32_t, NodeId> user_;    // node -> (one of) its users; invalid for a store
  bool reused_through_alias(NodeId n) const;
  std::set<ViewKey> multi_depth_;  // dims seen at more than one depth
};

// A kernel's parameter lines (pointers, then constexpr strides, extents,
// blocks, masks' EVEN_ flags, tile sizes), for its signature.
std::vector<std::string> kernel_params(const Program& p, const LoweredProgram& lp, const ModuleNames& names,
                                       const KernelSignature& sig);
// "@triton.jit", then `def name(` with the parameter lines and `):`.
void write_jit_def(CodeWriter& w, const std::string& name, const std::vector<std::string>& param_lines);

// One emitter per op (triton_ops.cc), dispatched from the op table.
using OpEmitter = TileTuple (*)(KernelEmitter& k, NodeId n, std::span<const TileTuple> kids);
OpEmitter op_emitter(Op op);


std::string dtype_triton(DType t);  // "tl.float32", ...
std::string atom(const Expr& e);     // e's text, parenthesized unless an atom
// `e`, of dtype `from`, converted to `to` (".to(...)"). Conversions between
// bf16 and any dtype other than f32 go through f32: Triton's CPU interpreter
// converts only bf16 <-> f32 correctly (it holds bf16 as uint16 and converts
// everything else with numpy's astype, so int 3 becomes the bf16 whose bits
// are 3); on the GPU the step through f32 is exact for bool, f16 and
// integers below 2^24.
std::string convert_text(const Expr& e, DType from, DType to);
std::string dtype_torch(DType t);   // "torch.float32", ...

}  // namespace eqf::codegen
