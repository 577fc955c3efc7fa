// The soundness check of every rule (see eqiforge/rules/verify.h).
#include "eqiforge/rules/verify.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <ostream>
#include <random>

#include "eqiforge/egraph/ematch.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/interp/compare.h"
#include "eqiforge/interp/term_eval.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/typecheck.h"
#include "rules/rule_table.h"

namespace eqf {
namespace {

using rules::CompiledRule;
using rules::Ref;
using rules::RuleCtx;
using rules::TermBuilder;

constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();

// Terms of an e-graph's classes in a Program with no outputs (tile-level
// values cannot be outputs): each class gets its smallest term.
class TermProgram {
 public:
  TermProgram(const EGraph& g, const std::vector<uint64_t>& sizes) : g_(g), sizes_(sizes) {
    p_.file = "<rule check>";
    p_.name = Symbol::intern("rule_check");
    p_.dims = g.dims();
    for (const InputDecl& in : g.inputs()) input_[in.name.raw()] = p_.add_input(in.name, in.dtype, in.layout);
  }

  // The smallest term of class c.
  std::optional<NodeId> of_class(EClassId c) {
    c = g_.find(c);
    auto it = memo_.find(c.v);
    if (it != memo_.end()) return it->second;
    if (c.v >= sizes_.size() || sizes_[c.v] == kInf) return std::nullopt;
    // Iterative: children first.
    std::vector<std::pair<EClassId, bool>> stack = {{c, false}};
    while (!stack.empty()) {
      auto [k, expanded] = stack.back();
      stack.pop_back();
      if (memo_.count(k.v)) continue;
      ENodeId n = best(k);
      if (!expanded) {
        stack.push_back({k, true});
        for (EClassId ch : g_.children(n))
          if (!memo_.count(g_.find(ch).v)) stack.push_back({g_.find(ch), false});
        continue;
      }
      memo_[k.v] = of_node(n);
    }
    return memo_[c.v];
  }

  // An e-node over its children's smallest terms.
  NodeId of_node(ENodeId n) {
    if (g_.op(n) == Op::Input) return input_.at(g_.attrs(n)[0]);
    std::vector<NodeId> kids;
    for (EClassId ch : g_.children(n)) kids.push_back(*of_class(ch));
    return p_.add(g_.op(n), g_.attrs(n), kids);
  }

  // A built ref: its nodes over the smallest terms of its classes.
  NodeId of_ref(const TermBuilder& b, Ref r, std::map<int32_t, NodeId>& memo) {
    auto it = memo.find(r.v);
    if (it != memo.end()) return it->second;
    NodeId id;
    if (b.is_class(r)) {
      id = *of_class(b.class_of(r));
    } else if (b.op(r) == Op::Input) {
      id = input_.at(b.attrs(r)[0]);
    } else {
      std::vector<NodeId> kids;
      for (Ref k : b.kids(r)) kids.push_back(of_ref(b, k, memo));
      id = p_.add(b.op(r), b.attrs(r), kids);
    }
    return memo[r.v] = id;
  }

  bool finite(const TermBuilder& b, Ref r) const {
    if (b.is_class(r)) return sizes_[g_.find(b.class_of(r)).v] != kInf;
    for (Ref k : b.kids(r))
      if (!finite(b, k)) return false;
    return true;
  }

  Program& program() { return p_; }

 private:
  ENodeId best(EClassId c) const {
    for (ENodeId n : g_.nodes(c)) {
      uint64_t s = 1;
      for (EClassId ch : g_.children(n)) {
        uint64_t cs = sizes_[g_.find(ch).v];
        s = (cs == kInf || s + cs < s) ? kInf : s + cs;
      }
      if (s == sizes_[c.v]) return n;
    }
    throw Error("rule check: e-class c" + std::to_string(c.v) + " has no finite term");
  }

  const EGraph& g_;
  const std::vector<uint64_t>& sizes_;
  Program p_;
  std::map<uint32_t, NodeId> input_;
  std::map<uint32_t, NodeId> memo_;
};

// The outcome of comparing two terms of one program.
struct Comparison {
  bool evaluated = false;
  bool informative = false;  // some position held a number on both sides
  double error = 0;
  std::string failure;  // an evaluation error
  BlockSizes blocks;
};

Comparison compare_terms(Program& p, NodeId a, NodeId b, uint64_t seed, int trials) {
  Comparison out;
  try {
    typecheck(p);
  } catch (const Error& e) {
    out.failure = std::string("the terms do not type-check: ") + e.what();
    return out;
  }
  for (int t = 0; t < trials; ++t) {
    BlockSizes blocks = random_block_sizes(p, seed + uint64_t(t));
    std::vector<Tensor64> inputs = random_inputs(p, seed + uint64_t(t));
    std::vector<TermValue> vals;
    try {
      NodeId roots[] = {a, b};
      vals = evaluate_terms(p, inputs, blocks, roots);
    } catch (const Error& e) {
      out.failure = std::string("evaluation failed: ") + e.what();
      out.blocks = blocks;
      return out;
    }
    int64_t compared = 0;
    double err = term_difference(vals[1], vals[0], &compared);
    out.evaluated = true;
    out.informative |= compared > 0;
    if (err > out.error || t == 0) {
      out.error = std::max(out.error, err);
      out.blocks = blocks;
    }
  }
  return out;
}

std::string verdict_text(const Program& p, NodeId a, NodeId b, const Comparison& c,
                         const std::string& program) {
  char err[64];
  std::snprintf(err, sizeof err, "%.3g", c.error);
  return "in " + program + " (blocks " + block_sizes_text(c.blocks) + "), relative error " + err +
         "\n    left:  " + print_term(p, a) + "\n    right: " + print_term(p, b);
}

struct RuleState {
  CompiledRule rule;
  RuleVerdict verdict;
  bool done() const { return !verdict.failure.empty(); }
};

// Collects the matches of one pattern that pass the conditions.
class Collect final : public MatchSink {
 public:
  Collect(const EGraph& g, const CompiledRule& r, size_t limit) : g_(g), r_(r), limit_(limit) {}
  bool on_match(const uint32_t* subst) override {
    Match m(g_, r_.lhs, subst);
    for (const Condition& c : r_.conditions)
      if (!c.test(m)) return true;
    words.insert(words.end(), subst, subst + r_.lhs.subst_words());
    return ++count < limit_;
  }
  std::vector<uint32_t> words;
  size_t count = 0;

 private:
  const EGraph& g_;
  const CompiledRule& r_;
  size_t limit_;
};

void check_rule_on(RuleState& st, EGraph& g, const std::vector<uint64_t>& sizes, const VerifyOptions& opts,
                   const std::string& program, std::mt19937_64& rng) {
  const CompiledRule& rule = st.rule;
  Matcher matcher;
  Collect sink(g, rule, 4096);
  matcher.search(g, rule.lhs, SearchOptions{}, sink);
  if (sink.count == 0) return;
  const size_t words = size_t(rule.lhs.subst_words());
  // Matches in a random order, so the sample is not all from one corner.
  std::vector<size_t> order(sink.count);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  int tried_here = 0;
  for (size_t i : order) {
    if (st.verdict.instantiations >= opts.samples_per_rule || st.done() ||
        tried_here >= 4 * opts.samples_per_rule)
      return;
    ++tried_here;
    ++st.verdict.matches_tried;
    const uint32_t* subst = sink.words.data() + i * words;
    Match m(g, rule.lhs, subst);
    TermBuilder b(g, /*reuse=*/false);
    RuleCtx ctx(b, m, opts.rules, /*structural=*/true);
    // A stateful applier's caches belong to one e-graph: a fresh one here.
    const CompiledRule fresh = rule.spec.make_apply ? rules::compile(rule.spec) : CompiledRule{};
    rules::run_applier(rule.spec.make_apply ? fresh : rule, ctx, /*instantiate_lhs=*/true);
    for (auto [x, y] : ctx.equalities) {
      if (b.data(x).type != b.data(y).type) continue;  // not applied by the runner either
      TermProgram tp(g, sizes);
      if (!tp.finite(b, x) || !tp.finite(b, y)) continue;
      std::map<int32_t, NodeId> memo;
      NodeId a = tp.of_ref(b, x, memo), c = tp.of_ref(b, y, memo);
      Comparison cmp = compare_terms(tp.program(), a, c, rng(), opts.trials);
      if (!cmp.failure.empty()) {
        st.verdict.failure = cmp.failure + " in " + program + "\n    left:  " + print_term(tp.program(), a) +
                             "\n    right: " + print_term(tp.program(), c);
        return;
      }
      st.verdict.max_error = std::max(st.verdict.max_error, cmp.error);
      if (cmp.error > opts.tolerance) {
        st.verdict.failure = "the two sides differ " + verdict_text(tp.program(), a, c, cmp, program);
        return;
      }
      if (cmp.informative) ++st.verdict.instantiations;
    }
  }
}

// Whole e-graph: every e-node of sampled classes against the class's
// smallest term.
void check_egraph(EGraph& g, const std::vector<uint64_t>& sizes, const VerifyOptions& opts,
                  const std::string& program, std::mt19937_64& rng, VerifyReport& report) {
  std::vector<EClassId> classes = g.classes();
  std::shuffle(classes.begin(), classes.end(), rng);
  int checked = 0;
  for (EClassId c : classes) {
    if (checked >= opts.classes_per_program) break;
    if (sizes[c.v] == kInf || g.nodes(c).size() < 2) continue;
    ++checked;
    ++report.classes_checked;
    std::vector<ENodeId> nodes(g.nodes(c).begin(), g.nodes(c).end());
    std::shuffle(nodes.begin(), nodes.end(), rng);
    if (int(nodes.size()) > opts.nodes_per_class) nodes.resize(size_t(opts.nodes_per_class));
    for (ENodeId n : nodes) {
      bool finite = true;
      for (EClassId ch : g.children(n)) finite &= sizes[g.find(ch).v] != kInf;
      if (!finite) continue;
      TermProgram tp(g, sizes);
      NodeId rep = *tp.of_class(c);
      NodeId term = tp.of_node(n);
      if (rep == term) continue;
      ++report.nodes_checked;
      Comparison cmp = compare_terms(tp.program(), rep, term, rng(), 1);
      std::string origin(g.origin_name(g.origin(n)));
      if (!cmp.failure.empty())
        report.egraph_failures.push_back(program + ": class c" + std::to_string(c.v) + ": e-node by " +
                                         origin + ": " + cmp.failure);
      else if (cmp.error > opts.tolerance)
        report.egraph_failures.push_back(program + ": class c" + std::to_string(c.v) + ": e-node by " +
                                         origin + " differs from the class's term " +
                                         verdict_text(tp.program(), rep, term, cmp, program));
    }
  }
}

}  // namespace

VerifyReport verify_rules(const VerifyOptions& opts) {
  // The rules under test, and the library that saturates the corpus.
  std::vector<RuleState> states;
  for (const rules::RuleSpec& s : rules::all_specs(opts.rules)) {
    bool wanted =
        (!opts.family || s.family == *opts.family) &&
        (opts.only.empty() || std::find(opts.only.begin(), opts.only.end(), s.name) != opts.only.end());
    if (!wanted) continue;
    RuleState st{rules::compile(s), {}};
    st.verdict.name = s.name;
    st.verdict.family = std::string(family_name(s.family));
    states.push_back(std::move(st));
  }
  for (const ExtraRule& e : opts.extra) {
    rules::RuleSpec s;
    s.name = e.name;
    s.lhs = e.lhs;
    s.rhs = e.rhs;
    s.conditions = e.conditions;
    RuleState st{rules::compile(s), {}};
    st.verdict.name = e.name;
    st.verdict.family = "extra";
    states.push_back(std::move(st));
  }

  const std::vector<CorpusProgram>& corpus = opts.corpus.empty() ? builtin_corpus() : opts.corpus;
  std::mt19937_64 rng(opts.seed);
  VerifyReport report;
  for (const CorpusProgram& cp : corpus) {
    bool pending = false;
    for (const RuleState& st : states)
      pending |= !st.done() && st.verdict.instantiations < opts.samples_per_rule;
    Program p = parse_and_check(cp.text, cp.name);
    EGraph g;
    load_program(g, p);
    Runner runner(g);
    runner.with_time_limit(opts.seconds_per_program)
        .with_node_limit(opts.nodes_per_program)
        .with_iter_limit(100000);
    // The expanding directions are checked when asked for, but never
    // saturate: they do not terminate with associativity (library.h).
    RuleOptions saturation = opts.rules;
    saturation.expanding_algebra = false;
    add_rule_library(runner, saturation);
    RunReport run = runner.run();
    g.rebuild();
    std::vector<uint64_t> sizes = smallest_term_sizes(g);
    auto t0 = std::chrono::steady_clock::now();
    if (pending)
      for (RuleState& st : states)
        if (!st.done() && st.verdict.instantiations < opts.samples_per_rule)
          check_rule_on(st, g, sizes, opts, cp.name, rng);
    check_egraph(g, sizes, opts, cp.name, rng, report);
    if (opts.log) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "%-24s %7zu e-nodes %6zu e-classes %3d iterations %-14s %6.2f s saturate %6.2f s check\n",
                    cp.name.c_str(), run.nodes, run.classes, run.iterations,
                    std::string(stop_reason_name(run.stop)).c_str(), run.seconds,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      *opts.log << line << std::flush;
    }
  }

  for (RuleState& st : states) {
    if (st.verdict.failure.empty() && st.verdict.instantiations == 0)
      st.verdict.failure = st.verdict.matches_tried == 0
                               ? "no match in the corpus"
                               : "no instantiation that evaluates to numbers (" +
                                     std::to_string(st.verdict.matches_tried) + " matches tried)";
    ++report.rules;
    if (st.verdict.failure.empty())
      ++report.verified;
    else
      report.failed.push_back(st.verdict.name);
    report.verdicts.push_back(std::move(st.verdict));
  }
  return report;
}

std::string VerifyReport::text() const {
  std::string out;
  char line[512];
  for (const RuleVerdict& v : verdicts) {
    std::snprintf(line, sizeof line, "%-40s %-17s %3d checked %3d matches  max error %.2g  %s\n",
                  v.name.c_str(), v.family.c_str(), v.instantiations, v.matches_tried, v.max_error,
                  v.failure.empty() ? "ok" : "FAILED");
    out += line;
    if (!v.failure.empty()) out += "    " + v.failure + "\n";
  }
  std::snprintf(line, sizeof line, "\n%d rules, %d verified, %zu failed\n", rules, verified, failed.size());
  out += line;
  std::snprintf(line, sizeof line, "whole e-graphs: %d classes, %d e-nodes checked, %zu failures\n",
                classes_checked, nodes_checked, egraph_failures.size());
  out += line;
  for (const std::string& f : egraph_failures) out += "  " + f + "\n";
  return out;
}

}  // namespace eqf
