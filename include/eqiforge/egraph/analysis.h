// The e-class analysis (egg's make / merge / modify shape).
//
// Every e-class carries ClassData: its type (DESIGN §2.3; all e-nodes of a
// class have one type) and constant facts (the value of a literal constant,
// for folding and for rule conditions).
//
//   make    computes the data of a new e-node from its children's data; a node
//           that is not well-formed (its type does not check) is refused and
//           never enters the e-graph.
//   merge   combines the data of two classes being united. Classes of
//           different types are never united: that is a bug in the rule that
//           asked for it, reported as an eqf::Error naming the rule.
//   modify  runs after a class's data was made or changed and may add nodes
//           (the `const` node of a folded value) and unions.
//
// The analysis is an interface so tests can run the engine with a simpler
// one; the real one (make_type_analysis) calls infer_type.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "eqiforge/egraph/id.h"
#include "eqiforge/ir/node.h"
#include "eqiforge/ir/type.h"

namespace eqf {

class EGraph;

struct ClassData {
  TypeId type;
  bool has_value = false;  // the class equals the literal constant `value`
  double value = 0;
};

struct MergeOutcome {
  bool into_changed = false;  // `into` gained information (parents re-run make)
  bool from_changed = false;  // the merged data differs from `from`
};

class Analysis {
 public:
  virtual ~Analysis() = default;

  // Data of op(attrs)(children) whose children have `children` data. Returns
  // false with a reason when the node must not be added.
  virtual bool make(EGraph& g, Op op, const Attrs& attrs, std::span<const ClassData> children, ClassData& out,
                    std::string& why) = 0;

  // Merges `from` into `into`. Returns false with `why` ("f16[m k] with
  // f16[m]") when the classes must not be united. The default requires equal
  // types and agreeing values.
  virtual bool merge(const EGraph& g, ClassData& into, const ClassData& from, MergeOutcome& outcome,
                     std::string& why);

  virtual void modify(EGraph& g, EClassId id) { (void)g, (void)id; }

  // "f32[m k]", "literal = 2": for dumps and messages.
  virtual std::string data_text(const EGraph& g, const ClassData& d) const;
};

// The real analysis: types by infer_type (memoized on the op, attributes and
// children's types, since many e-nodes share them), input types from the
// e-graph's declared inputs, and, when fold_constants is set, values of
// pointwise ops over literal constants (the class then gains a `const` node).
std::unique_ptr<Analysis> make_type_analysis(bool fold_constants = true);

}  // namespace eqf
