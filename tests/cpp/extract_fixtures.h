// Shared helpers of the extraction tests: e-graphs built from a naive
// program and its tiled forms, with optional rules that add redundant forms.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/egraph/schedule.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/rules/library.h"
#include "sanitizer.h"

namespace eqf::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// An e-graph holding `naive` and `variants`, their outputs united in order.
struct United {
  EGraph g;
  Program naive;
  std::vector<EClassId> roots;

  United(const std::string& naive_text, const std::vector<std::string>& variant_texts)
      : naive(parse_and_check(naive_text, "naive")) {
    roots = load_program(g, naive);
    for (const std::string& text : variant_texts) {
      Program v = parse_and_check(text, "variant");
      std::vector<EClassId> r = load_program(g, v);
      for (size_t i = 0; i < r.size(); ++i) g.merge(roots[i], r[i]);
    }
    g.rebuild();
    refresh();
  }
  void refresh() {
    for (EClassId& r : roots) r = g.find(r);
  }

  // Rules that add forms equal to the tiled ones up to extraction's ≈:
  // commutativity and associativity of add and mul, commuted contractions,
  // and reordered load and grid wrappers.
  void add_redundant_forms(int iterations) {
    std::vector<Rewrite> rules = rule_set("ac");
    rules.push_back(rewrite("swap-part-rep", "(partition ?p ?d (replicate ?q ?x))", "(replicate ?q (partition ?p ?d ?x))"));
    rules.push_back(rewrite("swap-rep-part", "(replicate ?q (partition ?p ?d ?x))", "(partition ?p ?d (replicate ?q ?x))"));
    rules.push_back(rewrite("swap-part-part", "(partition ?p ?d (partition ?q ?e ?x))", "(partition ?q ?e (partition ?p ?d ?x))"));
    rules.push_back(rewrite("swap-rep-rep", "(replicate ?p (replicate ?q ?x))", "(replicate ?q (replicate ?p ?x))"));
    rules.push_back(rewrite("swap-combine", "(combine ?p ?d (combine ?q ?e ?x))", "(combine ?q ?e (combine ?p ?d ?x))"));
    rules.push_back(rewrite("comm-tile-matmul", "(tile_matmul ?k ?a ?b)", "(tile_matmul ?k ?b ?a)"));
    Runner run(g);
    run.with_rules("redundant", std::move(rules)).with_iter_limit(iterations).with_node_limit(100000);
    run.run();
    refresh();
  }
};

inline std::vector<std::string> example_variants(const std::string& folder) {
  std::vector<std::string> names;
  if (folder == "attention") names = {"flash"};
  else if (folder == "attention_decode") names = {"flash_decoding", "split_channels"};
  else if (folder == "layernorm") names = {"one_pass_tuple", "one_pass_welford"};
  else if (folder == "lora") names = {"one_kernel", "two_kernels"};
  else if (folder == "matmul") names = {"split_k", "split_k_two_levels"};
  else if (folder == "rmsnorm_mlp") names = {"factor_after_fused"};
  std::vector<std::string> texts;
  for (const std::string& n : names) texts.push_back(read_text("examples/" + folder + "/" + n + ".eqf"));
  return texts;
}

inline const std::vector<std::string>& example_folders() {
  static const std::vector<std::string> f = {"attention", "attention_decode", "layernorm",
                                             "lora",      "matmul",           "rmsnorm_mlp"};
  return f;
}

// The e-graph of a naive program saturated by the rule library (the tests
// expect saturation: the time limit only guards against a hang, and scales
// under the sanitizers).
struct Saturated {
  United u;
  explicit Saturated(const std::string& file) : Saturated(read_text(file), file) {}
  Saturated(const std::string& text, const std::string& file) : u(text, {}) {
    Runner runner(u.g);
    runner.with_node_limit(200'000).with_time_limit(60 * kTimeScale).with_iter_limit(10'000);
    add_rule_library(runner);
    RunReport report = runner.run();
    EXPECT_EQ(report.stop, StopReason::Saturated) << file;
    u.refresh();
  }
};

// Two kernels that share only the dim of their results (each kernel's body
// is used by its own grid only).
inline const char* kTwoElementwiseKernels = R"(
(program two
  (dims (k 256))
  (input x f32 [k])
  (let a (combine k.0 k (exp (partition k.0 k x))))
  (output out [k] (combine k.0 k (mul (partition k.0 k a) (partition k.0 k x)))))
)";

}  // namespace eqf::testing
