// Kernel formation (DESIGN §2.4, §6): a type-checked tiled program becomes an
// ordered list of kernels over a set of buffers. This is the target-neutral
// half of code generation; the Triton emitter (codegen/triton.h) and the cost
// model read the same structure.
//
// What makes a kernel. A kernel is a maximal region under `combine`/`collect`
// at its top, with `preduce` loops inside:
//   - its root is an output, a `collect`, or a global value (no axes) that
//     another kernel reads whole or in blocks (an intermediate buffer);
//   - the axes combined at the root (or, for a collect, the collected axis
//     and the axes the collected value is partitioned on) are its grid; every
//     `preduce` inside is a sequential loop over its axis, carrying the
//     reduction's state in accumulators;
//   - its leaves are materialized tensors (inputs and intermediate buffers),
//     reached through `partition`/`replicate` chains and layout views
//     (rename/split/merge): a block load at the coordinates of the
//     partitioning axes, a whole load for replicated axes.
//
// Scheduling. Every node of a kernel is placed in the outermost scope where
// it can be computed: inside the innermost loop whose axis it varies with
// (its state on that axis is not `rep`), else at the kernel's top. Loads that
// are replicated over a loop axis are thereby hoisted out of that loop. A
// node used by two loops over the same axis is placed (and loaded) in both.
//
// Unit axes. An axis whose block size is fixed to 1 contributes no tile
// dimension: the dim it partitions is squeezed out of the tiles (a head index
// on the grid). By default the axes that block a batch dim of a
// `tile_matmul` (a dim both operands have) are unit axes, so that the
// contraction stays two-dimensional and can use the tensor cores.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "eqiforge/ir/program.h"

namespace eqf {

enum class BufferKind : uint8_t { Input, Output, Intermediate };

// A tensor in global memory.
struct Buffer {
  BufferKind kind = BufferKind::Input;
  std::string name;  // input/output name, let name, or a generated one
  DType dtype = DType::F32;
  std::vector<Symbol> layout;  // dims, outermost first (c_<p> dims have symbolic extents)
  NodeId node;                 // input leaf, output value, collect or materialized global node
  int component = -1;          // the tuple component a collect buffer holds; -1 for tensors
  int producer = -1;           // index of the kernel that writes it; -1 for inputs
};

// How a dim appears in one value's tiles: `depth` axes partition it (part or
// local states), so the tile holds a block of the innermost one (depth 0: the
// whole dim). Squeezed dims (a unit innermost axis, or extent 1) have no tile
// dimension: their index is a scalar.
struct DimView {
  Symbol dim;
  int depth = 0;
  bool squeezed = false;
  friend bool operator==(const DimView&, const DimView&) = default;
};

// A read of a materialized tensor.
struct Load {
  NodeId node;                // the value as the kernel sees it (outermost wrapper)
  NodeId source;              // input, collect or materialized global node; an `iota` leaf
  std::vector<NodeId> views;  // rename/split/merge between node and source, outermost first
  int buffer = -1;            // -1 for iota (an index, not a memory read)
  int component = -1;         // for a tuple buffer read through `proj`
  int scope = -1;             // loop index, -1 = the kernel's top
  // Axes over which the same elements are read again (replicated states):
  // each element is read prod(coordinates of these axes) times.
  std::vector<Axis> replicated_over;
};

// A write of a kernel's result.
struct Store {
  int buffer = -1;
  NodeId value;                   // the tensor stored (for a tuple collect: the tuple)
  int component = -1;             // tuple component, -1 for a tensor
  std::optional<Axis> collected;  // for collect: the axis whose coordinate indexes c_<p>
};

// A scope's schedule: nodes computed in order, loads, and nested loops.
struct Item {
  enum class Kind : uint8_t { Compute, Load, Loop };
  Kind kind = Kind::Compute;
  NodeId node;     // Compute, Load: the node; Loop: the preduce
  int index = -1;  // Load: index into loads; Loop: index into loops
};

struct Block {
  std::vector<Item> items;
};

// One component of a loop's running state.
struct Accumulator {
  std::vector<DimView> dims;  // its tile (the preduce body's component, without the loop axis)
  RedComponent red;           // base (+ or max) and repair
};

// A sequential loop over the coordinates of a preduce axis.
struct Loop {
  Axis axis;
  NodeId preduce;
  int parent = -1;  // enclosing loop, -1 = the kernel's top
  std::vector<Accumulator> accumulators;
  Block body;
};

struct Kernel {
  std::string name;        // "<buffer>_kernel"
  NodeId root;             // the node the region implements (output value, collect, global)
  std::vector<Axis> grid;  // program_id(i) is the coordinate of grid[i]
  std::vector<Loop> loops;
  std::vector<Load> loads;
  std::vector<Store> stores;
  Block body;
};

struct LowerOptions {
  // Axes fixed to block size 1 (squeezed). nullopt: the default choice above.
  std::optional<std::set<Axis>> unit_axes;
};

struct LoweredProgram {
  std::vector<Buffer> buffers;  // inputs first (declared order), then outputs, then intermediates
  std::vector<Kernel> kernels;  // in launch order
  std::set<Axis> unit_axes;
  std::vector<Axis> axes;  // every axis the kernels use, unit ones included (axes_of order)
};

// The values a loop's body gives its state, one per component: the children
// of the preduce's tuple, or the preduce's child itself.
std::vector<NodeId> loop_parts(const Program& p, const Loop& loop);

// Forms the kernels of a type-checked program. Throws eqf::Error at the
// offending node for structures that have no kernel form, naming the node and
// why ("lowering: combine of m.0 inside a loop over k.0 ...").
LoweredProgram lower_program(const Program& p, const LowerOptions& options = {});

// Each kernel's launch level: one past the highest level of the kernels
// whose buffers it reads (0 for a kernel that reads only inputs). Every
// buffer has one producer, launched before its readers, so the kernels of one
// level never read what another of them writes: they may run side by side,
// and the emitted module launches them together (codegen/triton.h).
std::vector<int> launch_levels(const LoweredProgram& lp);

// The default unit axes of a program (see "Unit axes" above).
std::set<Axis> default_unit_axes(const Program& p);
// The unit axes one tile_matmul over k with operands of types a and b asks
// for (its batch dims' innermost blocking axes), added to *out.
void add_tile_matmul_unit_axes(const TensorType& a, const TensorType& b, Symbol k, std::set<Axis>* out);

// The tile view of a node's value in a program (its type's dims, each with
// the number of axes blocking it), given the unit axes; dims in the dim
// table's declaration order. For a tuple, the views of its first component.
std::vector<DimView> tile_view(const Program& p, NodeId n, const std::set<Axis>& unit_axes);
std::vector<DimView> tile_view(const Program& p, const TensorType& t, const std::set<Axis>& unit_axes);

}  // namespace eqf
