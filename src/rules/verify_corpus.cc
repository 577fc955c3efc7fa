// The soundness check's corpus: the examples and workloads at small sizes
// (extents of a few elements, so blocks are ragged and every value is cheap
// to evaluate), and seed programs that exercise rules they never trigger
// (every pointwise op under every layout op, a scaled right operand, ...).
#include <string>

#include "eqiforge/ir/op.h"
#include "eqiforge/rules/verify.h"

namespace eqf {
namespace {

const char* kAttention = R"(
(program attention
  (dims (h 2) (s 3) (t 5) (e 4) (f 3))
  (input q f32 [h s e])
  (input k f32 [h t e])
  (input v f32 [h t f])
  (let scores (mul (matmul e q k) (rsqrt 4)))
  (let m (max t scores))
  (let p (exp (sub scores m)))
  (let l (sum t p))
  (output o [h s f] (matmul t (div p l) v))))";

const char* kAttentionDecode = R"(
(program attention_decode
  (dims (h 2) (s 1) (t 7) (e 4) (f 4))
  (input q f32 [h s e])
  (input k f32 [h t e])
  (input v f32 [h t f])
  (let scores (mul (matmul e q k) (rsqrt 4)))
  (let m (max t scores))
  (let p (exp (sub scores m)))
  (output o [h s f] (matmul t (div p (sum t p)) v))))";

// A sink logit per head in the softmax's max and denominator.
const char* kAttentionSinks = R"(
(program attention_sinks
  (dims (h 2) (s 1) (t 6) (e 4) (f 3))
  (input q f32 [h s e])
  (input k f32 [h t e])
  (input v f32 [h t f])
  (input sink f32 [h])
  (let scores (mul (matmul e q k) (rsqrt 4)))
  (let m (max2 (max t scores) sink))
  (let p (exp (sub scores m)))
  (output o [h s f] (div (matmul t p v) (add (sum t p) (exp (sub sink m)))))))";

// Differential attention: two softmax maps per head, the second scaled by
// a per-head lambda and subtracted before P.V (the maps sliced as masked
// sums over their dim, as the front end captures p[:, :, 0:1]). Last: its
// e-graph is the largest, and the rules that only it triggers are the
// slice-after-contraction ones.
const char* kDiffAttention = R"(
(program diff_attention
  (dims (h 2) (h1 2) (t 4) (e 2) (f 2))
  (input q f32 [h h1 e])
  (input k f32 [h h1 t e])
  (input v f32 [h t f])
  (input lam f32 [h])
  (let scores (mul (matmul e q k) 0.5))
  (let m (max t scores))
  (let p (exp (sub scores m)))
  (let s (div p (sum t p)))
  (let first (sum h1 (where (eq (iota h1) 0) s 0)))
  (let second (sum h1 (where (eq (iota h1) 1) s 0)))
  (output o [h f] (matmul t (sub first (mul lam second)) v))))";

const char* kAttentionPrefill = R"(
(program attention_prefill
  (dims (b 1) (h 2) (s 4) (t 4) (e 3) (f 3))
  (input q f32 [b h s e])
  (input k f32 [b h t e])
  (input v f32 [b h t f])
  (let visible (le (iota t) (iota s)))
  (let scores (where visible (mul (matmul e q k) 0.5) -inf))
  (let m (max t scores))
  (let p (exp (sub scores m)))
  (output o [b h s f] (matmul t (div p (sum t p)) v))))";

const char* kLayerNorm = R"(
(program layernorm
  (dims (m 3) (k 7))
  (input x f32 [m k])
  (input g f32 [k])
  (input b f32 [k])
  (let mean (div (sum k x) 7))
  (let d (sub x mean))
  (let var (div (sum k (mul d d)) 7))
  (output y [m k] (add (mul (mul d (rsqrt (add var 1e-5))) g) b))))";

const char* kLayerNormGemm = R"(
(program layernorm_gemm
  (dims (m 2) (k 5) (n 4))
  (input x f32 [m k])
  (input g f32 [k])
  (input b f32 [k])
  (input w f32 [k n])
  (let mean (div (sum k x) 5))
  (let d (sub x mean))
  (let var (div (sum k (mul d d)) 5))
  (let xn (add (mul (mul d (rsqrt (add var 1e-5))) g) b))
  (output y [m n] (matmul k xn w))))";

const char* kLora = R"(
(program lora
  (dims (m 2) (k 6) (n 5) (r 2))
  (input x f32 [m k])
  (input w f32 [k n])
  (input a f32 [k r])
  (input b f32 [r n])
  (output y [m n] (add (matmul k x w) (matmul r (matmul k x a) b)))))";

const char* kRmsnormMlp = R"(
(program rmsnorm_mlp
  (dims (m 2) (k 6) (n 5))
  (input x f32 [m k])
  (input g f32 [k])
  (input w1 f32 [k n])
  (input w2 f32 [k n])
  (let r (rsqrt (add (div (sum k (mul x x)) 6) 1e-6)))
  (let xn (mul (mul x r) g))
  (output y [m n] (mul (silu (matmul k xn w1)) (matmul k xn w2)))))";

const char* kRmsnormSwiglu = R"(
(program rmsnorm_swiglu
  (dims (m 2) (k 4) (i 5) (o 3))
  (input x f32 [m k])
  (input g f32 [k])
  (input wg f32 [k i])
  (input wu f32 [k i])
  (input wd f32 [i o])
  (let xn (mul (mul x (rsqrt (add (div (sum k (mul x x)) 4) 1e-6))) g))
  (let act (mul (silu (matmul k xn wg)) (matmul k xn wu)))
  (output y [m o] (matmul i act wd))))";

const char* kGatedMlp = R"(
(program gated_mlp
  (dims (m 2) (k 5) (n 4))
  (input x f32 [m k])
  (input w1 f32 [k n])
  (input w2 f32 [k n])
  (output y [m n] (mul (silu (matmul k x w1)) (matmul k x w2)))))";

const char* kNgpt = R"(
(program ngpt
  (dims (m 2) (k 4) (n 5))
  (input x f32 [m k])
  (input w f32 [k n])
  (input h f32 [m n])
  (input alpha f32 [n])
  (let y (matmul k x w))
  (let y_n (div y (sqrt (sum n (mul y y)))))
  (let u (add h (mul alpha (sub y_n h))))
  (output h_new [m n] (div u (sqrt (sum n (mul u u)))))))";

const char* kQknormProj = R"(
(program qknorm_proj
  (dims (m 2) (k 4) (n 6) (h 2) (e 3))
  (input x f32 [m k])
  (input wq f32 [k n])
  (input wk f32 [k n])
  (input gq f32 [e])
  (input gk f32 [e])
  (let q (split n h e (matmul k x wq)))
  (let kk (split n h e (matmul k x wk)))
  (output q_n [m h e] (mul (mul q (rsqrt (add (div (sum e (mul q q)) 3) 1e-6))) gq))
  (output k_n [m h e] (mul (mul kk (rsqrt (add (div (sum e (mul kk kk)) 3) 1e-6))) gk))))";

const char* kMatmul = R"(
(program matmul
  (dims (m 4) (k 6) (n 3))
  (input a f32 [m k])
  (input b f32 [k n])
  (output c [m n] (matmul k a b))))";

// A scale or divisor on the right operand of a contraction, and a reduction
// of a product with a factor that does not vary along it.
const char* kScaledMatmul = R"(
(program scaled_matmul
  (dims (m 3) (k 4) (n 3))
  (input x f32 [m k])
  (input w f32 [k n])
  (input c f32 [n])
  (input r f32 [m])
  (output y [m n] (matmul k x (mul c w)))
  (output z [m n] (matmul k x (div w c)))
  (output s [m] (max k (add x r)))
  (output t [m] (sum k (div x r)))))";

// Units, inverses and factorings the workloads never spell out.
const char* kUnits = R"(
(program units
  (dims (m 2) (k 3) (n 2))
  (input x f32 [m k])
  (input y f32 [k])
  (input z f32 [k])
  (input r f32 [m])
  (input w f32 [k n])
  (input v f32 [k n])
  (output a [m k] (add (mul x 1) (sub y 0)))
  (output b [m k] (add (div x 1) (add y 0)))
  (output c [m k] (mul (log (exp x)) (neg (neg y))))
  (output d [m k] (max2 x (min2 y (max2 x y))))
  (output e [m k] (min2 (min2 x y) (max2 y (max2 z x))))
  (output f [m k] (sub (mul x y) (mul x z)))
  (output g [m k] (add (div x y) (div z y)))
  (output h [m k] (sub (div x y) (div z y)))
  (output i [m] (max k (sub x r)))
  (output j [n m] (add (matmul k w x) (matmul k v x)))
  (output ex1 [m k] (mul (exp x) (exp y)))
  (output ex2 [m k] (div (exp x) (exp r)))))";

// Attention with the values as the left operand of P.V.
const char* kAttentionValueFirst = R"(
(program attention_value_first
  (dims (s 3) (t 4) (e 2) (f 2))
  (input q f32 [s e])
  (input k f32 [t e])
  (input v f32 [t f])
  (let scores (matmul e q k))
  (let p (exp (sub scores (max t scores))))
  (output o [s f] (matmul t v (div p (sum t p))))))";

// Multi-head latent attention's scores: keys expanded from a latent cache
// (C W), scaled per position and per channel; the up-projection and the
// channel gain can move onto the query.
const char* kLatentScores = R"(
(program latent_scores
  (dims (h 2) (e 3) (t 4) (c 3) (n 6))
  (input q f32 [h e])
  (input ckv f32 [t c])
  (input kinv f32 [t h])
  (input w f32 [c n])
  (input g f32 [e])
  (output s [h t] (matmul e q (mul (mul (split n h e (matmul c ckv w)) kinv) g)))
  (output z [h t] (matmul e (mul (split n h e (matmul c ckv w)) g) q))))";

// A buffer written by collect, read by a reduction: propagation into it.
const char* kCollect = R"(
(program collect_seed
  (dims (m 3) (k 5) (n 2))
  (input x f32 [m k])
  (input z f32 [m n])
  (let y (reduce c_k.0 + (collect k.0 (sum k (partition k.0 k x)))))
  (output a [m] y)
  (output b [m n] (mul z y))))";

// Every pointwise op of the op table under a broadcast (replicate), and at
// a global value of its own (partition), under split, merge and rename.
std::string pointwise_zoo() {
  std::string out =
      "(program pointwise_zoo\n"
      "  (dims (m 2) (k 4) (a 2) (b 2) (j 4))\n"
      "  (input x f32 [m k])\n  (input y f32 [k])\n  (input z f32 [k])\n"
      "  (input u f32 [m a b])\n  (input ya f32 [a b])\n  (input xj f32 [m j])\n";
  int n = 0;
  auto output = [&](const std::string& layout, const std::string& expr) {
    out += "  (output o" + std::to_string(n++) + " [" + layout + "] " + expr + ")\n";
  };
  for (int i = 0; i < kNumOps; ++i) {
    Op op = Op(i);
    if (!op_has(op, kPointwise)) continue;
    const OpInfo& info = op_info(op);
    std::string head = "(" + std::string(info.name);
    if (op == Op::Pow) head += " 2";
    if (op == Op::Cast) head += " f32";
    // The operands: a predicate for where's condition, values elsewhere.
    auto apply = [&](const std::string& first, const std::string& second) {
      if (op == Op::Where) return head + " (lt " + first + " " + second + ") " + first + " " + second + ")";
      if (info.arity == 1) return head + " " + first + ")";
      return head + " " + first + " " + second + ")";
    };
    const bool predicate = op_has(op, kPredicate);
    std::string global = apply("y", "z");
    output("m k", predicate ? "(where " + global + " x 1)" : "(mul x " + global + ")");
    output("m a b", "(split k a b " + apply("x", "y") + ")");
    output("m k", "(merge a b k " + apply("u", "ya") + ")");
    output("m j", "(rename k j " + apply("x", "y") + ")");
  }
  // Layout ops under a broadcast, over reductions and contractions.
  output("m a b", "(mul u (split k a b (add y z)))");
  output("m k", "(mul x (merge a b k (add ya ya)))");
  output("m j", "(mul xj (rename k j (add y z)))");
  output("a b", "(split k a b (sum m x))");
  output("k", "(merge a b k (sum m u))");
  output("j", "(rename k j (sum m x))");
  output("k", "(merge a b k (matmul m u (sum k x)))");
  output("j", "(rename k j (matmul m x (sum k x)))");
  return out + ")\n";
}

}  // namespace

const std::vector<CorpusProgram>& builtin_corpus() {
  static const std::vector<CorpusProgram> corpus = {
      {"attention", kAttention},
      {"attention_decode", kAttentionDecode},
      {"attention_sinks", kAttentionSinks},
      {"attention_prefill", kAttentionPrefill},
      {"layernorm", kLayerNorm},
      {"layernorm_gemm", kLayerNormGemm},
      {"lora", kLora},
      {"rmsnorm_mlp", kRmsnormMlp},
      {"rmsnorm_swiglu", kRmsnormSwiglu},
      {"gated_mlp", kGatedMlp},
      {"ngpt", kNgpt},
      {"qknorm_proj", kQknormProj},
      {"matmul", kMatmul},
      {"scaled_matmul", kScaledMatmul},
      {"units", kUnits},
      {"attention_value_first", kAttentionValueFirst},
      {"latent_scores", kLatentScores},
      {"collect_seed", kCollect},
      {"pointwise_zoo", pointwise_zoo()},
      {"diff_attention", kDiffAttention},
  };
  return corpus;
}

}  // namespace eqf
