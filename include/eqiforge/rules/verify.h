// The soundness check of the rule library: every rule is checked, not
// trusted (DESIGN §4).
//
// A corpus of small programs (the examples and workloads re-sized small,
// plus seed programs for rules they never trigger) is saturated with every
// rule. Then, for each rule, a sample of its matches is instantiated once
// more, off the e-graph: the left side rebuilt from the pattern over the
// matched classes, the right side as the rule builds it. Every class is
// given its smallest term, both sides become terms of one program, and the
// reference interpreter evaluates them on random inputs with random legal
// block sizes (ragged ones too), comparing every coordinate of every axis at
// every valid position (float64, relative error <= 1e-9). A rule fails when
// a comparison differs, when its right side does not evaluate, or when no
// match in the corpus gives it an instantiation.
//
// The whole-e-graph check: after saturating each program, terms built from
// every e-node of sampled e-classes evaluate equal to the class's smallest
// term.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "eqiforge/rules/library.h"

namespace eqf {

// A rule given as text, checked besides the library's (tests show with a
// deliberately wrong one that the check catches it). Not used to saturate.
struct ExtraRule {
  std::string name, lhs, rhs, conditions;
};

// A program of the corpus: its name and its text.
struct CorpusProgram {
  std::string name;
  std::string text;
};
// The built-in corpus (small versions of the examples and workloads, and
// seeds for the rules they never trigger).
const std::vector<CorpusProgram>& builtin_corpus();

struct VerifyOptions {
  std::optional<Family> family;   // only this family's rules
  std::vector<std::string> only;  // only these rules (by name), if given
  RuleOptions rules;              // the rules under test (the corpus is saturated without expanding_algebra)
  std::vector<ExtraRule> extra;
  std::vector<CorpusProgram> corpus;  // empty: builtin_corpus()
  uint64_t seed = 0;
  int samples_per_rule = 4;  // instantiations compared per rule
  int trials = 2;            // random inputs and block sizes per instantiation
  double tolerance = 1e-9;
  // Saturation limits per corpus program.
  double seconds_per_program = 10;
  size_t nodes_per_program = 40000;
  // Whole-e-graph check: classes sampled per program, e-nodes per class.
  int classes_per_program = 40;
  int nodes_per_class = 6;
  std::ostream* log = nullptr;  // progress, one line per program
};

struct RuleVerdict {
  std::string name;
  std::string family;  // "extra" for ExtraRule
  int matches_tried = 0;
  int instantiations = 0;  // compared on at least one position holding a number
  double max_error = 0;
  std::string failure;  // empty when verified
};

struct VerifyReport {
  int rules = 0;
  int verified = 0;
  std::vector<std::string> failed;  // rule names
  std::vector<RuleVerdict> verdicts;
  // Whole e-graphs.
  int classes_checked = 0, nodes_checked = 0;
  std::vector<std::string> egraph_failures;  // "program: class c12: e-node by rule R: ..."
  std::string text() const;
};

VerifyReport verify_rules(const VerifyOptions& opts);

}  // namespace eqf
