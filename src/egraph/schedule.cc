#include "eqiforge/egraph/schedule.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/sexpr.h"
#include "ir/sexpr_release.h"

namespace eqf {

// ---- schedules --------------------------------------------------------------------------

Schedule Schedule::run(std::vector<std::string> sets) {
  Schedule s;
  s.kind_ = Kind::Run;
  s.sets_ = std::move(sets);
  return s;
}

Schedule Schedule::saturate(Schedule body) {
  Schedule s;
  s.kind_ = Kind::Saturate;
  s.parts_.push_back(std::move(body));
  return s;
}

Schedule Schedule::repeat(int times, Schedule body) {
  Schedule s;
  s.kind_ = Kind::Repeat;
  s.times_ = times;
  s.parts_.push_back(std::move(body));
  return s;
}

Schedule Schedule::seq(std::vector<Schedule> parts) {
  Schedule s;
  s.kind_ = Kind::Seq;
  s.parts_ = std::move(parts);
  return s;
}

namespace {

// Real schedules nest a few levels; a bound keeps parsing (and every walk of
// the parsed schedule, all recursive) within a small stack.
constexpr int kMaxScheduleDepth = 64;

Schedule parse_one(const SExpr& e, const std::string& file, int depth = 1) {
  auto fail = [&](const SExpr& at, const std::string& msg) -> Schedule { throw Error(file, at.loc, msg); };
  if (depth > kMaxScheduleDepth)
    return fail(e, "schedules nest at most " + std::to_string(kMaxScheduleDepth) + " levels");
  if (!e.is_list() || e.items.empty() || !e.items[0].is_atom())
    return fail(
        e, "expected (run SET...), (saturate S), (repeat N S) or (seq S...), got `" + sexpr_text(e) + "`");
  const std::string& head = e.items[0].atom;
  if (head == "run") {
    std::vector<std::string> sets;
    for (size_t i = 1; i < e.items.size(); ++i) {
      if (!e.items[i].is_atom()) return fail(e.items[i], "run expects rule set names");
      sets.push_back(e.items[i].atom);
    }
    if (sets.empty()) return fail(e, "run expects at least one rule set name");
    return Schedule::run(std::move(sets));
  }
  if (head == "saturate") {
    if (e.items.size() != 2) return fail(e, "saturate expects one schedule");
    return Schedule::saturate(parse_one(e.items[1], file, depth + 1));
  }
  if (head == "repeat") {
    int n = -1;
    if (e.items.size() == 3 && e.items[1].is_atom()) {
      try {
        size_t used = 0;
        n = std::stoi(e.items[1].atom, &used);
        if (used != e.items[1].atom.size()) n = -1;
      } catch (...) {
        n = -1;
      }
    }
    if (n < 0) return fail(e, "repeat expects a non-negative count and one schedule: (repeat N S)");
    return Schedule::repeat(n, parse_one(e.items[2], file, depth + 1));
  }
  if (head == "seq") {
    std::vector<Schedule> parts;
    for (size_t i = 1; i < e.items.size(); ++i) parts.push_back(parse_one(e.items[i], file, depth + 1));
    return Schedule::seq(std::move(parts));
  }
  return fail(e.items[0], "unknown schedule `" + head + "`: expected run, saturate, repeat or seq");
}

}  // namespace

Schedule Schedule::parse(std::string_view text, const std::string& file) {
  std::vector<SExpr> items = read_sexprs(text, file);
  ReleaseSExprs release_on_exit(items);  // a deep tree, freed without deep recursion
  if (items.size() != 1) throw Error(file, {}, "expected one schedule, got " + std::to_string(items.size()));
  return parse_one(items[0], file);
}

std::vector<std::string> Schedule::all_sets() const {
  std::vector<std::string> out;
  // Depth-first, left to right, so the order is the order of first use.
  std::function<void(const Schedule&)> walk = [&](const Schedule& s) {
    for (const std::string& name : s.sets_)
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    for (const Schedule& p : s.parts_) walk(p);
  };
  walk(*this);
  return out;
}

std::string Schedule::text() const {
  switch (kind_) {
    case Kind::Run: {
      std::string t = "(run";
      for (const std::string& s : sets_) t += " " + s;
      return t + ")";
    }
    case Kind::Saturate:
      return "(saturate " + parts_[0].text() + ")";
    case Kind::Repeat:
      return "(repeat " + std::to_string(times_) + " " + parts_[0].text() + ")";
    case Kind::Seq: {
      std::string t = "(seq";
      for (const Schedule& p : parts_) t += " " + p.text();
      return t + ")";
    }
  }
  return "";
}

// ---- the rule-set registry ---------------------------------------------------------------

namespace {

std::vector<Rewrite> ac_rules() {
  std::vector<Rewrite> r;
  r.push_back(rewrite("comm-add", "(add ?a ?b)", "(add ?b ?a)"));
  r.push_back(rewrite("assoc-add", "(add ?a (add ?b ?c))", "(add (add ?a ?b) ?c)"));
  r.push_back(rewrite("comm-mul", "(mul ?a ?b)", "(mul ?b ?a)"));
  r.push_back(rewrite("assoc-mul", "(mul ?a (mul ?b ?c))", "(mul (mul ?a ?b) ?c)"));
  return r;
}

// Plain algebra with no conditions, so the same rules can be written for
// other engines (bench/egraph/compare.py).
std::vector<Rewrite> arith_rules() {
  std::vector<Rewrite> r = ac_rules();
  auto add = [&](std::vector<Rewrite> rs) {
    for (Rewrite& x : rs) r.push_back(std::move(x));
  };
  add(birewrite("distribute", "(mul ?a (add ?b ?c))", "(add (mul ?a ?b) (mul ?a ?c))"));
  r.push_back(rewrite("add-zero", "(add ?a 0)", "?a"));
  r.push_back(rewrite("mul-one", "(mul ?a 1)", "?a"));
  r.push_back(rewrite("sub-to-neg", "(sub ?a ?b)", "(add ?a (neg ?b))"));
  r.push_back(rewrite("neg-neg", "(neg (neg ?a))", "?a"));
  r.push_back(rewrite("neg-mul", "(neg (mul ?a ?b))", "(mul (neg ?a) ?b)"));
  add(birewrite("div-mul", "(div (mul ?a ?b) ?c)", "(mul ?a (div ?b ?c))"));
  return r;
}

struct Entry {
  std::string summary;
  RuleSetFactory factory;
};

struct SetRegistry {
  std::mutex mu;
  std::map<std::string, Entry> sets;
};

SetRegistry& set_registry() {
  static SetRegistry* r = [] {
    auto* reg = new SetRegistry;
    reg->sets["none"] = {"no rules", [] { return std::vector<Rewrite>{}; }};
    reg->sets["ac"] = {"commutativity and associativity of add and mul", ac_rules};
    reg->sets["arith"] = {"ac, distributivity, units, sub/neg/div laws (the engine benchmark's set)",
                          arith_rules};
    return reg;
  }();
  return *r;
}

}  // namespace

void register_rule_set(const std::string& name, const std::string& summary, RuleSetFactory factory) {
  SetRegistry& r = set_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.sets[name] = Entry{summary, std::move(factory)};
}

std::vector<Rewrite> rule_set(std::string_view name) {
  RuleSetFactory factory;
  {
    SetRegistry& r = set_registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.sets.find(std::string(name));
    if (it == r.sets.end()) {
      std::string known;
      for (const auto& [n, e] : r.sets) known += (known.empty() ? "" : ", ") + n;
      throw Error("unknown rule set `" + std::string(name) + "`; known: " + known);
    }
    factory = it->second.factory;
  }
  return factory();
}

std::vector<RuleSetInfo> rule_sets() {
  SetRegistry& r = set_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<RuleSetInfo> out;
  for (const auto& [n, e] : r.sets) out.push_back({n, e.summary});
  return out;
}

}  // namespace eqf
