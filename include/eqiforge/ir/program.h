// A program: a DAG of nodes with named inputs and outputs.
//
// Nodes are stored flat, children before parents (ids grow bottom-up), and
// hash-consed: adding a node equal to an existing one (same op, attrs,
// children) returns the existing id, so structurally equal subterms share.
// Inputs carry a dim order (their memory layout); outputs carry the layout
// they are returned in.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/dims.h"
#include "eqiforge/ir/node.h"
#include "eqiforge/ir/type.h"

namespace eqf {

struct NodeId {
  uint32_t v = 0xffffffffu;
  friend bool operator==(NodeId a, NodeId b) { return a.v == b.v; }
  friend bool operator!=(NodeId a, NodeId b) { return a.v != b.v; }
  friend bool operator<(NodeId a, NodeId b) { return a.v < b.v; }
};

struct Node {
  Op op;
  Attrs attrs;
  uint32_t first_child = 0;  // index into the program's child pool
  uint32_t num_children = 0;
  SourceLoc loc;
};

struct InputDecl {
  Symbol name;
  DType dtype;
  std::vector<Symbol> layout;  // dims, outermost first
  NodeId node;                 // its `input` leaf
  SourceLoc loc;
};

struct OutputDecl {
  Symbol name;
  std::vector<Symbol> layout;  // dims, outermost first
  NodeId value;
  SourceLoc loc;
};

class Program {
 public:
  std::string file;  // for messages; "<string>" when parsed from memory
  Symbol name;
  DimTable dims;

  // Adds (or finds) a node. Children must already exist.
  NodeId add(Op op, const Attrs& attrs, std::span<const NodeId> children, SourceLoc loc = {});
  NodeId add_input(Symbol name, DType dtype, std::vector<Symbol> layout, SourceLoc loc = {});
  void add_output(Symbol name, std::vector<Symbol> layout, NodeId value, SourceLoc loc = {});

  size_t size() const { return nodes_.size(); }
  const Node& node(NodeId id) const { return nodes_[id.v]; }
  std::span<const NodeId> children(NodeId id) const;
  const std::vector<InputDecl>& inputs() const { return inputs_; }
  const std::vector<OutputDecl>& outputs() const { return outputs_; }

  // Names bound by `let` in the source; the printer reuses them.
  void set_name(NodeId id, Symbol name) { names_[id.v] = name; }
  Symbol name_of(NodeId id) const;

  // Types, one per node, filled by typecheck(); empty before.
  const std::vector<TypeId>& types() const { return types_; }
  TypeId type(NodeId id) const { return types_[id.v]; }
  void set_types(std::vector<TypeId> types) { types_ = std::move(types); }

  // Structural equality of the output DAGs (names of lets and node order
  // ignored; dims, inputs and outputs compared).
  bool same_as(const Program& other) const;

 private:
  struct Key;
  std::vector<Node> nodes_;
  std::vector<NodeId> child_pool_;
  std::vector<InputDecl> inputs_;
  std::vector<OutputDecl> outputs_;
  std::unordered_map<uint32_t, Symbol> names_;
  std::unordered_multimap<uint64_t, uint32_t> cons_;  // node hash -> node index
  std::vector<TypeId> types_;
};

}  // namespace eqf
