// Patterns: S-expressions over the IR's operators with ?variables, in the
// program text's syntax (docs/ir.md): attributes first, then children.
//
//   (add ?a (add ?b ?c))      class variables stand for e-classes
//   (reduce ?d ?r ?x)         attribute variables stand for attribute values
//   (sum ?d (mul ?s ?x))      sugar: (sum d X) is (reduce d + X), (max d X) is (reduce d max X)
//   (partition m.0 m ?x)      literal attributes: dims, axes, dtypes, reductions, numbers
//   (mul ?x 1)                a number is a literal constant, a bare name an input
//
// A variable is either a class variable (in child positions) or an attribute
// variable of one attribute kind; using it both ways is an error. A match is
// a substitution: a flat array of u32 words, word 0 the matched (root)
// class, then one word per class variable, then the attribute variables'
// slots (an F64 attribute takes two).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/egraph/id.h"
#include "eqiforge/ir/node.h"

namespace eqf {

struct PatternVar {
  std::string name;                // with the leading '?'
  bool is_attr = false;            // an attribute variable (else a class variable)
  AttrKind kind = AttrKind::None;  // attribute variables only
  int word = 0;                    // position of its (first) word in a substitution
};

// One pattern node. Children of an op node are pattern nodes (indices into
// nodes()); attributes are literal slots or attribute variables.
struct PatternNode {
  bool is_var = false;
  int var = -1;  // class variable (is_var)
  Op op = Op::Input;
  Attrs attrs = {0, 0, 0};         // literal slots
  int attr_var[3] = {-1, -1, -1};  // per attribute position: variable index or -1
  std::vector<int> children;
};

class Pattern {
 public:
  // Parses one pattern; throws eqf::Error at the offending position.
  static Pattern parse(std::string_view text, const std::string& file = "<pattern>");
  // Parses within an existing variable table (the right side of a rule
  // shares the left side's variables); `define` allows new variables.
  static Pattern parse_with(std::string_view text, const std::string& file, std::vector<PatternVar>& vars,
                            bool define);

  const std::string& text() const { return text_; }
  std::span<const PatternNode> nodes() const { return nodes_; }
  int root() const { return int(nodes_.size()) - 1; }  // children come before parents
  bool is_var() const { return nodes_.back().is_var; }
  std::span<const PatternVar> vars() const { return vars_; }
  const PatternVar* var(std::string_view name) const;
  // Words in one substitution: 1 + class variables + attribute slots.
  int subst_words() const { return subst_words_; }

  // The most children a pattern node may have: an e-node holds at most
  // 65535 (so a wider pattern could never match) and Atom::num_children is
  // 16 bits. A wider node is a parse error, never truncated.
  static constexpr size_t kMaxChildren = 65535;

  // The compiled form the matcher runs (see ematch.cc).
  struct Atom {
    Op op;
    uint16_t num_children;
    uint8_t num_checks;
    struct Check {
      uint8_t slot;
      uint8_t mode;    // kFixed, kBind, kCompare
      uint32_t value;  // the literal, or the substitution word
    } checks[3];
    uint32_t first_child;  // into child_ops
  };
  static_assert(kMaxChildren <= std::numeric_limits<decltype(Atom::num_children)>::max());
  struct ChildOp {
    uint8_t mode;    // kBind, kCompare (class variable), kAtom (a nested atom)
    uint32_t value;  // substitution word, or atom index
  };
  static constexpr uint8_t kFixed = 0, kBind = 1, kCompare = 2, kAtom = 3;
  std::span<const Atom> atoms() const { return atoms_; }  // preorder: atom 0 is the root
  std::span<const ChildOp> child_ops() const { return child_ops_; }

 private:
  void compile();

  std::string text_;
  std::vector<PatternNode> nodes_;
  std::vector<PatternVar> vars_;
  int subst_words_ = 1;
  std::vector<Atom> atoms_;
  std::vector<ChildOp> child_ops_;
};

}  // namespace eqf
