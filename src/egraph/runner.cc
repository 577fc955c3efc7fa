#include "eqiforge/egraph/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>

#include "eqiforge/egraph/ematch.h"
#include "eqiforge/ir/diagnostic.h"

namespace eqf {

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Saturated:
      return "saturated";
    case StopReason::IterationLimit:
      return "iteration-limit";
    case StopReason::NodeLimit:
      return "node-limit";
    case StopReason::TimeLimit:
      return "time-limit";
    case StopReason::ScheduleDone:
      return "schedule-done";
    case StopReason::MemoryLimit:
      return "memory-limit";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

// A buffer's bytes as EGraph::memory_bytes() counts them: by capacity, and
// with `next_growth` at its grown size when it is within 1/16 of full.
size_t held_bytes(const HugeVector<uint32_t>& v, bool next_growth) {
  size_t cap = v.capacity();
  if (next_growth && v.size() + cap / 16 >= cap) cap *= 2;
  return cap * sizeof(uint32_t);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct RuleState {
  Rewrite rule;
  OriginId origin;
  uint32_t seen = 0;     // every match of e-nodes stamped before this was applied
  int banned_until = 0;  // iteration index
  int times_banned = 0;
  bool searched = false;  // searched this iteration, matches to apply
  // The matches found and not yet applied. A HugeVector: it grows in place
  // (a backoff search at AC n = 12 stores 10.7 M matches, 171 MB, which a
  // std::vector copied at each doubling into freshly zeroed pages), and it
  // keeps its pages from one iteration to the next.
  HugeVector<uint32_t> matches{false};
  RuleStats stats;
};

// Collects a rule's matches that pass its conditions, up to a threshold.
// Given a filter (a pattern rule whose search cannot be banned), every
// kFilterBatch matches the ones already applied (their right side is in their
// own class) are dropped at once (drop_applied), so only matches with work to
// do are stored: most matches of associativity, say, re-derive what the
// e-graph has. A search that may pass its threshold is not filtered: a ban
// would throw the lookups away. The count is of every match found, as the
// backoff scheduler defines it.
//
// `match_bytes` bounds the bytes the rule's match buffer may hold (a memory
// cap): past it the search ends and over_budget() says so.
class CollectSink final : public MatchSink {
 public:
  CollectSink(const EGraph& g, RuleState& r, uint64_t threshold, RhsBuilder* filter,
              size_t match_bytes = SIZE_MAX)
      : g_(g), r_(r), threshold_(threshold), filter_(r.rule.rhs ? filter : nullptr),
        words_(size_t(r.rule.lhs.subst_words())), match_bytes_(match_bytes) {}
  bool on_match(const uint32_t* subst) override {
    if (!r_.rule.conditions.empty()) {
      Match m(g_, r_.rule.lhs, subst);
      for (const Condition& c : r_.rule.conditions)
        if (!c.test(m)) return true;
    }
    r_.matches.append(subst, subst + words_);
    if (filter_ && ++unfiltered_ == RhsBuilder::kFilterBatch) flush();
    // Without a cap (SIZE_MAX) there is nothing to check per match.
    if (match_bytes_ != SIZE_MAX && held_bytes(r_.matches, true) > match_bytes_) {
      over_budget_ = true;
      return false;
    }
    return ++count_ <= threshold_;
  }
  bool over_budget() const { return over_budget_; }
  // Filters the matches not yet filtered; call once the search is over.
  void flush() {
    if (!filter_ || unfiltered_ == 0) return;
    const size_t first = r_.matches.size() - unfiltered_ * words_;
    size_t kept = filter_->drop_applied(g_, r_.rule, r_.matches.data() + first, unfiltered_);
    r_.matches.resize(first + kept * words_);
    unfiltered_ = 0;
  }
  uint64_t count() const { return count_; }

 private:
  const EGraph& g_;
  RuleState& r_;
  uint64_t threshold_;
  RhsBuilder* filter_;
  size_t words_;
  size_t match_bytes_;
  bool over_budget_ = false;
  size_t unfiltered_ = 0;  // matches at the end of r_.matches not yet filtered
  uint64_t count_ = 0;
};

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else
      out += c;
  }
  return out;
}

std::string fixed(double v, int digits = 6) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

struct Runner::Impl {
  explicit Impl(EGraph& graph) : g(graph) {}

  EGraph& g;
  int iter_limit = 30;  // egg's defaults
  size_t node_limit = 10000;
  double time_limit = 5.0;
  size_t memory_limit = 0;  // bytes; 0: none
  BackoffOptions backoff;
  std::vector<RuleState> rules;
  std::vector<std::string> set_order;
  std::optional<Schedule> schedule;
  Matcher matcher;
  RhsBuilder builder;

  // One run.
  Clock::time_point start;
  Clock::time_point deadline;
  int iterations = 0;  // across runs: the backoff's clock
  int run_iterations = 0;
  bool stopped = false;
  StopReason stop = StopReason::Saturated;
  bool last_changed = true;
  std::vector<IterationStats> per_iteration;

  double rebuild_rate = 2e-7;  // seconds per unit of pending rebuild work, measured as we go
  Clock::duration rebuild_estimate(size_t work) const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(2.0 * rebuild_rate * double(work)));
  }

  void halt(StopReason r) {
    if (!stopped) stopped = true, stop = r;
  }

  // The match buffers' bytes, as held_bytes() counts them without and with
  // the next growth; recounted after each search (they do not grow while
  // matches are applied), so the checks between batches stay O(1).
  size_t match_bytes = 0, match_bytes_next = 0;
  void recount_matches() {
    match_bytes = match_bytes_next = 0;
    for (const RuleState& r : rules) {
      match_bytes += held_bytes(r.matches, false);
      match_bytes_next += held_bytes(r.matches, true);
    }
  }
  // The e-graph's bytes and the match buffers the runner holds; with
  // `next_growth`, as the cap compares them (see EGraph::memory_bytes).
  size_t memory_bytes(bool next_growth = false) const {
    return g.memory_bytes(next_growth) + (next_growth ? match_bytes_next : match_bytes);
  }
  // What rule r's match buffer may grow to under the cap (SIZE_MAX: no cap).
  size_t match_budget(const RuleState& r) const {
    if (memory_limit == 0) return SIZE_MAX;
    const size_t others = memory_bytes(true) - held_bytes(r.matches, true);
    return memory_limit > others ? memory_limit - others : 0;
  }
  bool over_memory() const { return memory_limit != 0 && memory_bytes(true) > memory_limit; }
  // The most memory_bytes() seen at the checks of this run.
  size_t peak_memory = 0;
  void note_memory() { peak_memory = std::max(peak_memory, memory_bytes()); }

  bool in_sets(const RuleState& r, const std::vector<std::string>& sets) const {
    for (const std::string& s : sets)
      if (r.stats.set == s) return true;
    return false;
  }

  bool exec(const Schedule& s) {
    switch (s.kind()) {
      case Schedule::Kind::Run:
        return iteration(s.sets());
      case Schedule::Kind::Repeat: {
        bool changed = false;
        for (int i = 0; i < s.times() && !stopped; ++i) changed |= exec(s.parts()[0]);
        return changed;
      }
      case Schedule::Kind::Seq: {
        bool changed = false;
        for (const Schedule& p : s.parts()) {
          if (stopped) break;
          changed |= exec(p);
        }
        return changed;
      }
      case Schedule::Kind::Saturate: {
        bool changed = false;
        std::vector<std::string> sets = s.parts()[0].all_sets();
        while (!stopped) {
          bool c = exec(s.parts()[0]);
          changed |= c;
          if (stopped || c) continue;
          if (!unban(sets)) break;
        }
        return changed;
      }
    }
    return false;
  }

  // Lifts the bans of the sets' rules; true if some rule was banned.
  bool unban(const std::vector<std::string>& sets) {
    bool any = false;
    for (RuleState& r : rules) {
      if (!in_sets(r, sets) || r.banned_until <= iterations) continue;
      r.banned_until = iterations;
      any = true;
    }
    return any;
  }

  bool iteration(const std::vector<std::string>& sets) {
    for (const std::string& s : sets) {
      bool known = false;
      for (const std::string& k : set_order) known |= k == s;
      if (!known) throw Error("the schedule runs rule set `" + s + "`, which the runner was not given");
    }
    if (run_iterations >= iter_limit) return halt(StopReason::IterationLimit), false;
    // The rebuild that starts an iteration must fit before the deadline too
    // (twice its estimate: its rate falls as the e-graph outgrows the caches).
    if (Clock::now() + 2 * rebuild_estimate(g.pending_work()) >= deadline)
      return halt(StopReason::TimeLimit), false;
    if (g.num_nodes() > node_limit) return halt(StopReason::NodeLimit), false;
    recount_matches();  // the last iteration emptied the buffers
    note_memory();
    if (over_memory()) return halt(StopReason::MemoryLimit), false;

    g.rebuild();
    IterationStats it;
    it.index = iterations;
    for (size_t i = 0; i < sets.size(); ++i) it.sets += (i ? " " : "") + sets[i];
    const uint32_t now = g.tick();  // every existing e-node is stamped before `now`
    bool changed = false;

    // Search every rule on the same, rebuilt e-graph.
    Clock::time_point t0 = Clock::now();
    for (RuleState& r : rules) {
      r.searched = false;
      if (!in_sets(r, sets) || stopped) continue;
      if (backoff.enabled && r.banned_until > iterations) continue;
      uint64_t threshold = std::numeric_limits<uint64_t>::max();
      if (backoff.enabled)
        threshold = r.times_banned >= 40 ? threshold : backoff.match_limit << r.times_banned;
      r.matches.clear();
      Clock::time_point ts = Clock::now();
      const bool bannable = threshold != std::numeric_limits<uint64_t>::max();
      CollectSink sink(g, r, threshold, bannable ? nullptr : &builder, match_budget(r));
      SearchOptions opts;
      opts.new_since = r.rule.skip_seen ? r.seen : 0;
      opts.deadline = deadline;
      SearchEnd end = matcher.search(g, r.rule.lhs, opts, sink);
      sink.flush();
      recount_matches();
      note_memory();
      r.stats.search_seconds += seconds_since(ts);
      ++r.stats.searches;
      if (end == SearchEnd::Deadline) {
        r.matches.clear();
        halt(StopReason::TimeLimit);
        break;
      }
      if (sink.over_budget()) {
        // The matches would pass the memory cap: none is applied, and the
        // buffer goes back (extraction runs next, in the same memory).
        r.matches = HugeVector<uint32_t>(false);
        recount_matches();
        halt(StopReason::MemoryLimit);
        break;
      }
      if (sink.count() > threshold) {
        // Too many new matches: apply none, and try again after a ban that
        // doubles each time.
        int length = backoff.ban_length << std::min(r.times_banned, 20);
        r.banned_until = iterations + length;
        ++r.times_banned;
        ++r.stats.times_banned;
        ++it.banned;
        r.matches.clear();
        continue;
      }
      r.searched = true;
      r.stats.matches += sink.count();
      it.matches += sink.count();
    }
    it.search_seconds = seconds_since(t0);

    // Apply every match found.
    t0 = Clock::now();
    uint32_t steps = 0;
    for (RuleState& r : rules) {
      if (!r.searched || stopped) continue;
      g.set_origin(r.origin);
      Clock::time_point ta = Clock::now();
      const size_t words = size_t(r.rule.lhs.subst_words());
      bool complete = true;
      // Pattern appliers go in batches (RhsBuilder::apply_batch), C++ ones one
      // by one; limits are checked after each batch.
      const size_t batch = r.rule.rhs ? RhsBuilder::kBatch : 1;
      ApplyResult results[RhsBuilder::kBatch];
      const size_t total = r.matches.size() / words;
      // A match's class words (the root's, then one per class variable),
      // whose union-find entries its application reads first.
      size_t class_words = 1;
      for (const PatternVar& v : r.rule.lhs.vars()) class_words += !v.is_attr;
      for (size_t i = 0; i < total; i += batch) {
        size_t count = std::min(batch, total - i);
        const uint32_t* substs = r.matches.data() + i * words;
        if (r.rule.rhs) {
          // Prefetches only (the order of the work is as without them): the
          // matches two batches on, which lie past what the hardware
          // prefetcher follows in a buffer of 4 KiB pages, and the
          // union-find entries of the next batch's classes.
          if (i + 2 * batch < total) {
            const char* from = reinterpret_cast<const char*>(substs + 2 * batch * words);
            const char* to = reinterpret_cast<const char*>(
                r.matches.data() + std::min(total, i + 3 * batch) * words);
            for (; from < to; from += 64) __builtin_prefetch(from);
          }
          const size_t next = std::min(total, i + 2 * batch);
          for (const uint32_t* m = substs + batch * words; m < r.matches.data() + next * words; m += words)
            for (size_t w = 0; w < class_words; ++w) g.prefetch_find(EClassId(m[w]));
        }
        if (r.rule.rhs)
          builder.apply_batch(g, r.rule, substs, count, results);
        else
          results[0] = apply_rewrite(g, r.rule, substs, builder);
        for (size_t k = 0; k < count; ++k) {
          const ApplyResult& a = results[k];
          r.stats.nodes_added += a.nodes_added;
          r.stats.type_rejected += a.type_rejected;
          if (a.changed) ++r.stats.applications, ++it.applications, changed = true;
        }
        if (g.num_nodes() > node_limit) halt(StopReason::NodeLimit);
        note_memory();
        if (over_memory()) halt(StopReason::MemoryLimit);
        // Stop applying early enough that the rebuild this iteration still
        // owes fits before the deadline: the larger of twice the measured
        // rate's estimate and three quarters of the time applied so far
        // (rebuilds cost more per union as the e-graph outgrows the caches,
        // so past rates run low; a loaded machine slows them further).
        if ((++steps & 7) == 0) {
          Clock::time_point now = Clock::now();
          Clock::duration reserve = std::max(2 * rebuild_estimate(g.pending_work()), (now - t0) * 3 / 4);
          if (now + reserve >= deadline) halt(StopReason::TimeLimit);
        }
        if (stopped) {
          complete = i + count >= total;
          break;
        }
      }
      if (complete) r.seen = now;
      r.matches.clear();
      r.stats.apply_seconds += seconds_since(ta);
    }
    g.set_origin(kInputOrigin);
    it.apply_seconds = seconds_since(t0);

    t0 = Clock::now();
    const size_t work = g.pending_work();
    it.rebuild_unions = g.rebuild();
    it.rebuild_seconds = seconds_since(t0);
    if (work >= 1000) {
      // Keep the slowest rate seen recently: underestimating overshoots.
      double rate = it.rebuild_seconds / double(work);
      rebuild_rate = std::max(rate, 0.5 * rebuild_rate);
    }
    changed |= it.rebuild_unions > 0;
    it.nodes = g.num_nodes();
    it.classes = g.num_classes();
    per_iteration.push_back(it);
    ++iterations;
    ++run_iterations;
    last_changed = changed;
    // A rule banned here has matches it did not apply: not a fixpoint yet.
    return changed || it.banned > 0;
  }
};

Runner::Runner(EGraph& g) : impl_(std::make_unique<Impl>(g)) {}
Runner::~Runner() = default;

Runner& Runner::with_iter_limit(int n) {
  impl_->iter_limit = n;
  return *this;
}
Runner& Runner::with_node_limit(size_t n) {
  impl_->node_limit = n;
  return *this;
}
Runner& Runner::with_time_limit(double seconds) {
  impl_->time_limit = seconds;
  return *this;
}
Runner& Runner::with_memory_limit(size_t bytes) {
  impl_->memory_limit = bytes;
  return *this;
}
Runner& Runner::with_backoff(BackoffOptions b) {
  impl_->backoff = b;
  return *this;
}
Runner& Runner::with_simple_scheduler() {
  impl_->backoff.enabled = false;
  return *this;
}
Runner& Runner::with_rules(const std::string& set, std::vector<Rewrite> rules) {
  bool known = false;
  for (const std::string& s : impl_->set_order) known |= s == set;
  if (!known) impl_->set_order.push_back(set);
  for (Rewrite& r : rules) {
    RuleState st;
    st.origin = impl_->g.intern_origin(r.name);
    st.stats.name = r.name;
    st.stats.set = set;
    st.rule = std::move(r);
    impl_->rules.push_back(std::move(st));
  }
  return *this;
}
Runner& Runner::with_schedule(Schedule s) {
  impl_->schedule = std::move(s);
  return *this;
}

RunReport Runner::run() {
  Impl& m = *impl_;
  m.start = Clock::now();
  double limit = std::min(m.time_limit, 1e9);
  m.deadline = m.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  m.stopped = false;
  m.run_iterations = 0;
  m.recount_matches();
  m.peak_memory = 0;
  m.per_iteration.clear();
  for (RuleState& r : m.rules) r.stats = RuleStats{r.stats.name, r.stats.set};
  Schedule s = m.schedule ? *m.schedule : Schedule::saturate(Schedule::run(m.set_order));
  m.g.rebuild();
  if (!m.set_order.empty()) m.exec(s);
  m.g.rebuild();

  RunReport report;
  if (m.stopped)
    report.stop = m.stop;
  else if (!m.last_changed || m.set_order.empty())
    report.stop = StopReason::Saturated;
  else
    report.stop = StopReason::ScheduleDone;
  report.iterations = m.run_iterations;
  report.seconds = seconds_since(m.start);
  report.nodes = m.g.num_nodes();
  report.classes = m.g.num_classes();
  report.memory_bytes = m.memory_bytes();
  m.note_memory();
  report.peak_memory_bytes = m.peak_memory;
  for (const RuleState& r : m.rules) report.rules.push_back(r.stats);
  report.per_iteration = std::move(m.per_iteration);
  return report;
}

// ---- reports ------------------------------------------------------------------------------

std::string RunReport::text() const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "stop: %s\niterations: %d\ne-nodes: %zu\ne-classes: %zu\nmemory: %zu bytes (peak %zu)\n"
                "seconds: %.6f\n",
                std::string(stop_reason_name(stop)).c_str(), iterations, nodes, classes, memory_bytes,
                peak_memory_bytes, seconds);
  out += line;
  out +=
      "\nrule                             set          matches  applied  nodes+  rejected  banned   search_s "
      "  apply_s\n";
  for (const RuleStats& r : rules) {
    std::snprintf(line, sizeof line, "%-32s %-10s %9llu %8llu %7llu %9llu %7llu %10.6f %9.6f\n",
                  r.name.c_str(), r.set.c_str(), (unsigned long long)r.matches,
                  (unsigned long long)r.applications, (unsigned long long)r.nodes_added,
                  (unsigned long long)r.type_rejected, (unsigned long long)r.times_banned, r.search_seconds,
                  r.apply_seconds);
    out += line;
  }
  out +=
      "\niter  sets         e-nodes  e-classes   matches  applied  unions  banned  search_s   apply_s  "
      "rebuild_s\n";
  for (const IterationStats& it : per_iteration) {
    std::snprintf(line, sizeof line, "%4d  %-10s %9zu %10zu %9llu %8llu %7zu %7d %9.6f %9.6f %10.6f\n",
                  it.index, it.sets.c_str(), it.nodes, it.classes, (unsigned long long)it.matches,
                  (unsigned long long)it.applications, it.rebuild_unions, it.banned, it.search_seconds,
                  it.apply_seconds, it.rebuild_seconds);
    out += line;
  }
  return out;
}

std::string RunReport::json() const {
  std::string out = "{\"stop\": \"" + std::string(stop_reason_name(stop)) +
                    "\", \"iterations\": " + std::to_string(iterations) +
                    ", \"enodes\": " + std::to_string(nodes) + ", \"eclasses\": " + std::to_string(classes) +
                    ", \"memory_bytes\": " + std::to_string(memory_bytes) +
                    ", \"peak_memory_bytes\": " + std::to_string(peak_memory_bytes) +
                    ", \"seconds\": " + fixed(seconds) +
                    ", \"rules\": [";
  for (size_t i = 0; i < rules.size(); ++i) {
    const RuleStats& r = rules[i];
    out += std::string(i ? ", " : "") + "{\"name\": \"" + json_escape(r.name) + "\", \"set\": \"" +
           json_escape(r.set) + "\", \"searches\": " + std::to_string(r.searches) +
           ", \"matches\": " + std::to_string(r.matches) +
           ", \"applications\": " + std::to_string(r.applications) +
           ", \"nodes_added\": " + std::to_string(r.nodes_added) +
           ", \"type_rejected\": " + std::to_string(r.type_rejected) +
           ", \"times_banned\": " + std::to_string(r.times_banned) +
           ", \"search_seconds\": " + fixed(r.search_seconds) +
           ", \"apply_seconds\": " + fixed(r.apply_seconds) + "}";
  }
  out += "], \"per_iteration\": [";
  for (size_t i = 0; i < per_iteration.size(); ++i) {
    const IterationStats& it = per_iteration[i];
    out += std::string(i ? ", " : "") + "{\"index\": " + std::to_string(it.index) + ", \"sets\": \"" +
           json_escape(it.sets) + "\", \"enodes\": " + std::to_string(it.nodes) +
           ", \"eclasses\": " + std::to_string(it.classes) + ", \"matches\": " + std::to_string(it.matches) +
           ", \"applications\": " + std::to_string(it.applications) +
           ", \"rebuild_unions\": " + std::to_string(it.rebuild_unions) +
           ", \"banned\": " + std::to_string(it.banned) +
           ", \"search_seconds\": " + fixed(it.search_seconds) +
           ", \"apply_seconds\": " + fixed(it.apply_seconds) +
           ", \"rebuild_seconds\": " + fixed(it.rebuild_seconds) + "}";
  }
  return out + "]}";
}

}  // namespace eqf
