// libFuzzer harness for rule patterns and conditions (src/egraph/pattern.cc,
// rewrite.cc).
//
// An input is up to three sections separated by `|`:
//     LEFT | RIGHT | CONDITIONS
// e.g. `(sum ?d (mul ?s ?x))|(mul ?s (sum ?d ?x))|(not-has-dim ?s ?d)`.
// The left side alone goes through Pattern::parse; the three together
// through rewrite() (and birewrite(), which also parses the right side as a
// left side). A rule that is built is then run once by hand on a small
// e-graph that holds high-level and tiled programs: every match (up to a
// cap) has its conditions tested and its right side applied, then the
// e-graph is rebuilt. Bad text must be an eqf::Error; nothing may crash,
// hang or trip a sanitizer. A merge the analysis refuses (a rule whose
// sides have different types) is an eqf::Error too, and ends the input.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/ematch.h"
#include "eqiforge/egraph/pattern.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/rewrite.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"

namespace {

using namespace eqf;

// Programs the rules are matched against: the algebra (attention, layout
// ops, masks, casts) and tiled forms with partial, local and tuple states.
constexpr std::string_view kBase = R"((program base
  (dims (h 2) (s 10) (t 13) (e 8) (f 6) (m 5) (k 23) (a 2) (b 4) (n 7))
  (input q f32 [h s e])
  (input kk f32 [h t e])
  (input v f32 [h t f])
  (input x f32 [m k])
  (input w f32 [k n])
  (input c bool [m n])
  (let scores (mul (matmul e q kk) (rsqrt 8)))
  (let mx (max t scores))
  (let p (exp (sub scores mx)))
  (let l (sum t p))
  (output o1 [h s f] (div (matmul t p v) l))
  (let xw (matmul k x w))
  (output o2 [m n] (where c (silu xw) (gelu (neg xw))))
  (output o3 [m a b] (pow 2 (split k a b (rename k k x))))
  (let mask (le (iota s) (iota t)))
  (output o4 [s t] (cast f32 (max2 mask (lt (iota s) 3))))
  (output o5 [m] (log (add (sum k (mul x x)) 1e-6)))
  (let q_tile (partition s.0 s (partition h.0 h (replicate t.0 q))))
  (let k_tile (partition t.0 t (partition h.0 h (replicate s.0 kk))))
  (let v_tile (partition t.0 t (partition h.0 h (replicate s.0 v))))
  (let st (mul (tile_matmul e q_tile k_tile) (rsqrt 8)))
  (let m_blk (max t st))
  (let p_blk (exp (sub st m_blk)))
  (let state (preduce t.0 (max (exp-sum 0) (exp-sum 0))
               (tuple m_blk (sum t p_blk) (tile_matmul t p_blk v_tile))))
  (output o6 [h s f] (combine h.0 h (combine s.0 s (div (proj 2 state) (proj 1 state)))))
  (let xk (partition k.0 k (partition m.0 m (replicate n.0 x))))
  (let wk (partition k.0 k (partition n.0 n (replicate m.0 w))))
  (let part (tile_matmul k xk wk))
  (output o7 [m n] (combine m.0 m (combine n.0 n (preduce k.0 + part))))
  (output o8 [m n c_k.0] (combine m.0 m (combine n.0 n (collect k.0 part))))
  (let xr (partition m.0 m x))
  (let xt (partition k.0 k xr))
  (let cnt (sum k (add (mul xt 0) 1)))
  (let mean (div (sum k xt) cnt))
  (let d (sub xt mean))
  (let stats (preduce k.0 (+ (welford-mean 0) (welford-m2 0 1)) (tuple cnt mean (sum k (mul d d)))))
  (output o9 [m] (combine m.0 m (div (proj 2 stats) 23))))
)";

const Program& base_program() {
  static const Program* p = new Program(parse_and_check(kBase, "<base>"));
  return *p;
}

// Stops the search after kMaxMatches: a pattern such as `?x` matches every
// class, and applying each of them must stay within an iteration's budget.
class Collect : public MatchSink {
 public:
  explicit Collect(size_t words) : words_(words) {}
  bool on_match(const uint32_t* subst) override {
    substs.insert(substs.end(), subst, subst + words_);
    return substs.size() / words_ < kMaxMatches;
  }
  static constexpr size_t kMaxMatches = 256;
  std::vector<uint32_t> substs;

 private:
  size_t words_;
};

// Two iterations of what the runner does with one rule: search (from the
// previous iteration's clock on, when the rule may skip seen matches),
// filter by the conditions, apply in batches, rebuild.
void run_rule(const Rewrite& rule) {
  EGraph g;
  load_program(g, base_program());
  g.rebuild();
  g.set_origin(g.intern_origin(rule.name));
  Matcher matcher;
  RhsBuilder builder;
  const size_t words = size_t(rule.lhs.subst_words());
  uint32_t seen = 0;
  for (int iteration = 0; iteration < 2; ++iteration) {
    Collect sink(words);
    SearchOptions opts;
    opts.new_since = rule.skip_seen ? seen : 0;
    seen = g.tick();
    matcher.search(g, rule.lhs, opts, sink);
    std::vector<uint32_t> passed;
    for (size_t at = 0; at + words <= sink.substs.size(); at += words) {
      const uint32_t* subst = sink.substs.data() + at;
      const Match m(g, rule.lhs, subst);
      bool pass = true;
      for (const Condition& c : rule.conditions) pass = pass && c.test(m);
      if (pass) passed.insert(passed.end(), subst, subst + words);
    }
    const size_t total = passed.size() / words;
    ApplyResult results[RhsBuilder::kBatch];
    for (size_t i = 0; i < total; i += RhsBuilder::kBatch) {
      const size_t count = std::min(RhsBuilder::kBatch, total - i);
      const uint32_t* substs = passed.data() + i * words;
      if (rule.rhs)
        builder.apply_batch(g, rule, substs, count, results);
      else
        for (size_t k = 0; k < count; ++k) apply_rewrite(g, rule, substs + k * words, builder);
    }
    g.rebuild();
  }
  (void)rule.text();
  (void)g.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view parts[3];
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t bar = i < 2 ? input.find('|', start) : std::string_view::npos;
    parts[i] = input.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }

  try {
    const Pattern lhs = Pattern::parse(parts[0], "<fuzz>");
    (void)lhs.text();
  } catch (const Error&) {
  }
  try {
    (void)birewrite("fuzz", parts[0], parts[1], parts[2]);
  } catch (const Error&) {
  }
  std::optional<Rewrite> rule;
  try {
    rule.emplace(rewrite("fuzz", parts[0], parts[1], parts[2]));
  } catch (const Error&) {
    return 0;
  }
  try {
    run_rule(*rule);
  } catch (const Error&) {
    // A refused merge: the rule's sides have different types.
  }
  return 0;
}
