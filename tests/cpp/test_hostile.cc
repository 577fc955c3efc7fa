// Hostile and bad input through parse -> typecheck -> print -> interpreter:
// programs at the limits (huge extents, zero-size dims, thousands of ops,
// deep nesting), NaN and Inf inputs, unknown dtypes and ops, garbage bytes.
// Each gets correct behaviour or an eqf::Error with a clear message, never a
// crash, a hang, an absurd allocation or undefined behaviour.
//
// Calls that could hang or exhaust memory on a regression run in a child
// process with a time and memory limit (Guarded below), so one bad case is
// a clear test failure instead of a stuck or killed test run. Tests at the
// end under "regressions" pin bugs found by fuzzing and by these tests.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "eqiforge/egraph/egraph.h"
#include "eqiforge/egraph/ematch.h"
#include "eqiforge/egraph/pattern.h"
#include "eqiforge/egraph/program_io.h"
#include "eqiforge/egraph/rewrite.h"
#include "eqiforge/egraph/runner.h"
#include "eqiforge/egraph/schedule.h"
#include "eqiforge/interp/compare.h"
#include "eqiforge/interp/tensor.h"
#include "eqiforge/interp/interp.h"
#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/ir/sexpr.h"
#include "eqiforge/ir/typecheck.h"
#include "gen_program.h"

#include "sanitizer.h"

#ifdef EQF_TEST_UNDER_ASAN
// From the sanitizer runtime (sanitizer/allocator_interface.h, which GCC
// does not install).
extern "C" size_t __sanitizer_get_current_allocated_bytes();
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                        void (*free_hook)(const volatile void*));
#endif

namespace eqf {
namespace {

// ---- running a call under limits --------------------------------------------------------

struct Ended {
  enum Kind { Returned, ThrewError, ThrewOther, TimedOut, OutOfMemory, Crashed };
  Kind kind = Crashed;
  std::string message;  // the exception's what(), or how the child ended

  std::string text() const {
    static const char* kNames[] = {"returned", "threw eqf::Error", "threw another exception",
                                   "timed out", "ran out of its memory limit", "crashed"};
    return std::string(kNames[kind]) + (message.empty() ? "" : ": " + message);
  }
};

constexpr int kExitReturned = 0, kExitError = 1, kExitOther = 2, kExitMemory = 3;

#ifdef EQF_TEST_UNDER_ASAN
size_t g_memory_limit = 0;
void over_limit_hook(const volatile void*, size_t) {
  if (__sanitizer_get_current_allocated_bytes() > g_memory_limit) _exit(kExitMemory);
}
#endif

// Runs `fn` in a child process with `seconds` of time and `mb` megabytes of
// heap. The child reports an exception's text through a pipe.
Ended guarded(const std::function<void()>& fn, unsigned seconds = 20, size_t mb = 1024) {
  int fds[2];
  if (pipe(fds) != 0) return Ended{Ended::Crashed, "pipe() failed"};
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return Ended{Ended::Crashed, "fork() failed"};
  if (pid == 0) {
    close(fds[0]);
    alarm(seconds);
#ifdef EQF_TEST_UNDER_ASAN
    g_memory_limit = __sanitizer_get_current_allocated_bytes() + (mb << 20);
    __sanitizer_install_malloc_and_free_hooks(over_limit_hook, nullptr);
#else
    // The address space of the process so far plus mb: a runaway
    // allocation fails with std::bad_alloc.
    rlimit lim{};
    getrlimit(RLIMIT_AS, &lim);
    const rlim_t want = rlim_t(4) << 30 | rlim_t(mb) << 20;  // text and libraries fit well inside 4 GiB
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, want);
    setrlimit(RLIMIT_AS, &lim);
#endif
    auto report = [&](const std::string& text, int code) {
      ssize_t unused = write(fds[1], text.data(), text.size());
      (void)unused;
      _exit(code);
    };
    try {
      fn();
    } catch (const Error& e) {
      report(e.what(), kExitError);
    } catch (const std::bad_alloc& e) {
      report(std::string("std::bad_alloc: ") + e.what(), kExitMemory);
    } catch (const std::exception& e) {
      report(e.what(), kExitOther);
    } catch (...) {
      report("an exception of unknown type", kExitOther);
    }
    _exit(kExitReturned);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Ended e;
  e.message = text;
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kExitReturned: e.kind = Ended::Returned; break;
      case kExitError: e.kind = Ended::ThrewError; break;
      case kExitOther: e.kind = Ended::ThrewOther; break;
      case kExitMemory: e.kind = Ended::OutOfMemory; break;
      default: e.message = "exit status " + std::to_string(WEXITSTATUS(status)); break;
    }
  } else if (WIFSIGNALED(status)) {
    e.kind = WTERMSIG(status) == SIGALRM ? Ended::TimedOut : Ended::Crashed;
    e.message = std::string("signal ") + strsignal(WTERMSIG(status));
  }
  return e;
}

// The message of the eqf::Error that `fn` throws ("" and a test failure if
// it throws none).
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an eqf::Error";
  return "";
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// Runs `fn` on a thread with a 256 KiB stack and rethrows what it throws:
// code that recurses once per nesting level overflows it at a few hundred
// levels in any build, so a regression is a crash rather than a pass that
// depends on the default stack size and the compiler's frame sizes.
void on_small_stack(const std::function<void()>& fn) {
  struct Call {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } call{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(256) << 10);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    Call* c = static_cast<Call*>(arg);
    try {
      (*c->fn)();
    } catch (...) {
      c->error = std::current_exception();
    }
    return nullptr;
  };
  const int rc = pthread_create(&thread, &attr, body, &call);
  pthread_attr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("pthread_create failed");
  pthread_join(thread, nullptr);
  if (call.error) std::rethrow_exception(call.error);
}

constexpr int64_t k2p40 = int64_t(1) << 40;

// ---- huge extents ------------------------------------------------------------------------

// Types are symbolic in the extents: a 2^40 dim parses, type-checks and
// prints like any other.
TEST(Hostile, HugeExtentsParseTypeCheckAndPrint) {
  const std::string text = "(program big\n  (dims (m " + std::to_string(k2p40) +
                           ") (n 9223372036854775807))\n  (input x f32 [m n])\n  (output y [n m] (exp x)))\n";
  Program p = parse_and_check(text);
  EXPECT_EQ(p.dims.find(Symbol::intern("m"))->extent, k2p40);
  EXPECT_EQ(print_program(p), text);
}

// A value the interpreter would have to hold densely beyond its element
// budget is an error that says so, raised before the allocation.
TEST(Hostile, HugeIntermediateIsRefusedWithAClearError) {
  Program p = parse_and_check(
      "(program outer (dims (m 1048576) (n 1048576)) (input a f32 [m]) (input b f32 [n])"
      " (output y [m n] (mul a b)))");
  const Ended e = guarded([&] { evaluate(p, random_inputs(p, 1)); });
  EXPECT_EQ(e.kind, Ended::ThrewError) << e.text();
  EXPECT_NE(e.message.find("elements"), std::string::npos) << e.message;
}

// Random inputs for a 2^40-element input: an error naming the input, not an
// attempt at an 8 TiB allocation.
TEST(Hostile, HugeInputIsRefusedBeforeAllocation) {
  Program p = parse_and_check("(program big (dims (m " + std::to_string(k2p40) +
                              ")) (input x f32 [m]) (output y [m] (exp x)))");
  const Ended e = guarded([&] { random_inputs(p, 1); });
  EXPECT_EQ(e.kind, Ended::ThrewError) << e.text();
}

// Block sizes for an axis over a 2^40 dim are drawn in time that does not
// grow with the extent (and without a list of every candidate).
TEST(Hostile, BlockSizesForHugeExtentsAreQuick) {
  Program p = parse_and_check("(program big (dims (m " + std::to_string(k2p40) +
                              ")) (input x f32 [m]) (output y [m] (combine m.0 m (exp (partition m.0 m x)))))");
  const Ended e = guarded(
      [&] {
        for (uint64_t seed = 1; seed <= 16; ++seed) {
          const BlockSizes b = random_block_sizes(p, seed);
          const int64_t block = b.at(Axis{Symbol::intern("m"), 0});
          if (block < 1 || block > k2p40) throw std::runtime_error("block size out of range");
        }
      },
      10, 256);
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// An input tensor whose claimed shape multiplies past int64 is refused
// (wrong shape), with no overflow on the way.
TEST(Hostile, InputShapeProductDoesNotOverflow) {
  Program p = parse_and_check("(program big (dims (m " + std::to_string(k2p40) + ") (n " +
                              std::to_string(k2p40) + ")) (input x f32 [m n]) (output y [m n] (exp x)))");
  Tensor64 x;
  x.dims = {Symbol::intern("m"), Symbol::intern("n")};
  x.shape = {k2p40, k2p40};
  const Ended e = guarded([&] { evaluate(p, {x}); });
  EXPECT_EQ(e.kind, Ended::ThrewError) << e.text();
}

// ---- zero-size and malformed dims ------------------------------------------------------------

// A dim of extent 0 is refused where it is declared: the language has no
// empty tensors (every reduction would need an identity for nothing, and
// blocks of size 0 have no coordinates).
TEST(Hostile, ZeroSizeDimsAreRefused) {
  const std::string msg =
      error_of([] { parse_program("(program z (dims (m 0)) (input x f32 [m]) (output y [m] x))", "z.eqf"); });
  EXPECT_NE(msg.find("z.eqf:1:21"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a positive integer"), std::string::npos) << msg;
  for (const char* extent : {"-3", "2.5", "1e3", "99999999999999999999", "0x10", "+4", ""}) {
    const std::string m = error_of([&] {
      parse_program(std::string("(program z (dims (m ") + extent + ")) (input x f32 [m]) (output y [m] x))");
    });
    EXPECT_NE(m.find("dim"), std::string::npos) << extent << ": " << m;
  }
}

// The interpreter refuses an input whose shape does not match the declared
// extents, an empty one included.
TEST(Hostile, EmptyInputTensorIsRefused) {
  Program p = parse_and_check("(program z (dims (m 4)) (input x f32 [m]) (output y [m] (exp x)))");
  Tensor64 x;
  x.dims = {Symbol::intern("m")};
  x.shape = {0};
  const std::string msg = error_of([&] { evaluate(p, {x}); });
  EXPECT_NE(msg.find("input x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("m=4"), std::string::npos) << msg;
}

// ---- many ops ------------------------------------------------------------------------------

// 5000 lets in a chain and 2000 outputs: parse, type-check, round-trip and
// evaluate, each in linear-ish time.
TEST(Hostile, ThousandsOfOps) {
  std::string text = "(program many (dims (m 3) (k 5)) (input x f32 [m k]) (let v0 (exp x))\n";
  for (int i = 1; i < 5000; ++i)
    text += "(let v" + std::to_string(i) + " (" + (i % 3 == 0 ? "add" : i % 3 == 1 ? "mul" : "sub") + " v" +
            std::to_string(i - 1) + " " + (i % 7 == 0 ? "x" : "0.5") + "))\n";
  for (int i = 0; i < 2000; ++i)
    text += "(output y" + std::to_string(i) + " [k m] (tanh v" + std::to_string(i * 2 + 1) + "))\n";
  text += ")";
  const Ended e = guarded(
      [&] {
        Program p = parse_and_check(text);
        Program q = parse_and_check(print_program(p));
        if (!p.same_as(q)) throw std::runtime_error("round trip changed the program");
        const std::vector<Tensor64> out = evaluate(p, random_inputs(p, 1));
        if (out.size() != 2000) throw std::runtime_error("wrong number of outputs");
      },
      60, 1024);
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// A random program of 2000 operator applications (gen_program.h).
TEST(Hostile, ThousandsOfRandomOps) {
  testgen::GenOptions o;
  o.min_ops = o.max_ops = 2000;
  o.max_inputs = 8;
  o.max_outputs = 50;
  const Ended e = guarded(
      [&] {
        const testgen::GeneratedProgram g = testgen::generate_program(7, o);
        Program q = parse_and_check(print_program(g.program));
        if (!g.program.same_as(q)) throw std::runtime_error("round trip changed the program");
        evaluate(g.program, random_inputs(g.program, 1), random_block_sizes(g.program, 1));
      },
      120, 2048);
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// A tuple of 70000 components (more than 16 bits can count).
TEST(Hostile, WideTuple) {
  std::string text = "(program wide (dims (m 2)) (input x f32 [m]) (output y [m] (proj 69999 (tuple" +
                     repeat(" x", 69999) + " (neg x)))))";
  const Ended e = guarded([&] {
    Program p = parse_and_check(text);
    Program q = parse_and_check(print_program(p));
    if (!p.same_as(q)) throw std::runtime_error("round trip changed the program");
    Tensor64 x{{Symbol::intern("m")}, {2}, {1.5, -2}};
    const std::vector<Tensor64> out = evaluate(p, {x});
    if (out[0].data != std::vector<double>{-1.5, 2}) throw std::runtime_error("wrong value");
  });
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// ---- deep nesting ----------------------------------------------------------------------------

// 100k levels of nesting: an error at the limit, with the position, not a
// stack overflow -- in programs, in layouts, and in unbalanced text.
TEST(Hostile, DeepNestingIsAnErrorNotACrash) {
  const size_t depth = 100000;
  const std::vector<std::string> texts{
      "(program deep (dims (m 2)) (input x f32 [m]) (output y [m] " + repeat("(neg ", depth) + "x" +
          repeat(")", depth) + "))",
      "(program deep (dims (m 2)) (input x f32 [m]) (output y " + repeat("[", depth) + repeat("]", depth) + " x))",
      repeat("(", depth),
      repeat("(", depth) + repeat("]", depth),
  };
  for (const std::string& text : texts) {
    const Ended e = guarded([&] { parse_program(text); });
    EXPECT_EQ(e.kind, Ended::ThrewError) << e.text();
    EXPECT_NE(e.message.find("nesting deeper than " + std::to_string(kSExprMaxDepth)), std::string::npos)
        << e.message;
  }
  const Ended closers = guarded([&] { parse_program(repeat(")", depth)); });
  EXPECT_EQ(closers.kind, Ended::ThrewError) << closers.text();
}

// Just below the limit everything works: parse, type-check, print, the
// round trip and the interpreter (neg applied an even number of times).
TEST(Hostile, NestingJustBelowTheLimitWorks) {
  const size_t depth = size_t(kSExprMaxDepth) - 10;
  const std::string text = "(program deep (dims (m 2)) (input x f32 [m]) (output y [m] " +
                           repeat("(neg ", depth) + "x" + repeat(")", depth) + "))";
  const Ended e = guarded([&] {
    Program p = parse_and_check(text);
    Program q = parse_and_check(print_program(p));
    if (!p.same_as(q) || print_program(q) != print_program(p))
      throw std::runtime_error("round trip changed the program");
    Tensor64 x{{Symbol::intern("m")}, {2}, {0.25, -3}};
    if (evaluate(p, {x})[0].data != x.data) throw std::runtime_error("wrong value");
  });
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// ---- NaN and Inf -----------------------------------------------------------------------------

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Elementwise IEEE results for inputs (NaN, +inf, -inf, 0, -0, 1, -1),
// checked against the values IEEE 754 (and PyTorch's float64 ops) give.
TEST(Hostile, NanAndInfInputsFollowIeee) {
  Program p = parse_and_check(R"((program ieee
    (dims (i 7))
    (input x f64 [i])
    (output e [i] (exp x))
    (output l [i] (log x))
    (output s [i] (sqrt x))
    (output r [i] (div 1 x))
    (output z [i] (div x x))
    (output d [i] (sub x x))
    (output t [i] (tanh x))
    (output g [i] (sigmoid x))
    (output q [i] (mul x 0))
    (output w [i] (pow 2 x))))");
  const Tensor64 x{{Symbol::intern("i")}, {7}, {kNaN, kInf, -kInf, 0.0, -0.0, 1, -1}};
  const std::vector<Tensor64> out = evaluate(p, {x});
  auto expect = [&](size_t o, std::vector<double> want) {
    for (size_t j = 0; j < want.size(); ++j) {
      const double got = out[o].data[j];
      if (std::isnan(want[j])) {
        EXPECT_TRUE(std::isnan(got)) << p.outputs()[o].name.str() << "[" << j << "] = " << got;
      } else {
        EXPECT_EQ(got, want[j]) << p.outputs()[o].name.str() << "[" << j << "]";
      }
      if (!std::isnan(want[j]) && want[j] == 0) {
        EXPECT_EQ(std::signbit(got), std::signbit(want[j])) << p.outputs()[o].name.str() << "[" << j << "] sign";
      }
    }
  };
  const double e1 = std::exp(1.0), em1 = std::exp(-1.0);
  expect(0, {kNaN, kInf, 0, 1, 1, e1, em1});
  expect(1, {kNaN, kInf, kNaN, -kInf, -kInf, 0, kNaN});
  expect(2, {kNaN, kInf, kNaN, 0, -0.0, 1, kNaN});
  expect(3, {kNaN, 0, -0.0, kInf, -kInf, 1, -1});
  expect(4, {kNaN, kNaN, kNaN, kNaN, kNaN, 1, 1});
  expect(5, {kNaN, kNaN, kNaN, 0, 0, 0, 0});
  expect(6, {kNaN, 1, -1, 0, -0.0, std::tanh(1.0), -std::tanh(1.0)});
  expect(7, {kNaN, 1, 0, 0.5, 0.5, 1 / (1 + em1), 1 / (1 + e1)});
  expect(8, {kNaN, kNaN, kNaN, 0, -0.0, 0, -0.0});
  expect(9, {kNaN, kInf, kInf, 0, 0, 1, 1});
}

// Reductions, max2 and contractions propagate NaN (as torch.sum, torch.amax,
// torch.maximum and torch.matmul do); inf - inf and inf * 0 are NaN; a
// softmax over a row holding +inf is NaN, over a row of -inf too.
TEST(Hostile, NanAndInfThroughReductionsAndMatmul) {
  Program p = parse_and_check(R"((program red
    (dims (r 4) (c 3))
    (input x f64 [r c])
    (input w f64 [c])
    (output s [r] (sum c x))
    (output m [r] (max c x))
    (output mm [r] (matmul c x w))
    (output mx [r c] (max2 x 0))
    (output sm [r c] (div (exp (sub x (max c x))) (sum c (exp (sub x (max c x))))))))");
  const Tensor64 x{{Symbol::intern("r"), Symbol::intern("c")},
                   {4, 3},
                   {1, kNaN, 2,       // a NaN
                    kInf, -kInf, 0,   // inf - inf
                    -kInf, -kInf, -kInf,
                    1, 2, 3}};
  const Tensor64 w{{Symbol::intern("c")}, {3}, {1, 1, 0}};
  const std::vector<Tensor64> out = evaluate(p, {x, w});
  const Tensor64 &s = out[0], &m = out[1], &mm = out[2], &mx = out[3], &sm = out[4];
  EXPECT_TRUE(std::isnan(s.data[0]));
  EXPECT_TRUE(std::isnan(s.data[1]));
  EXPECT_EQ(s.data[2], -kInf);
  EXPECT_EQ(s.data[3], 6);
  EXPECT_TRUE(std::isnan(m.data[0]));
  EXPECT_EQ(m.data[1], kInf);
  EXPECT_EQ(m.data[2], -kInf);
  EXPECT_EQ(m.data[3], 3);
  EXPECT_TRUE(std::isnan(mm.data[0]));
  EXPECT_TRUE(std::isnan(mm.data[1]));  // inf*1 + -inf*1 + 0*0
  EXPECT_TRUE(std::isnan(mm.data[2]));  // -inf*1 + -inf*1 + -inf*0
  EXPECT_EQ(mm.data[3], 3);
  EXPECT_TRUE(std::isnan(mx.data[1]));
  EXPECT_EQ(mx.data[3], kInf);
  EXPECT_EQ(mx.data[4], 0);
  for (int j = 0; j < 9; ++j) EXPECT_TRUE(std::isnan(sm.data[size_t(j)])) << j;
  double total = 0;
  for (int j = 9; j < 12; ++j) total += sm.data[size_t(j)];
  EXPECT_NEAR(total, 1, 1e-15);
}

// Every op of random programs on inputs full of NaN, +-inf, +-0, the
// largest and smallest doubles: values, never an error or a crash, in the
// high-level and the tile-level forms alike.
TEST(Hostile, NonFiniteInputsNeverBreakEvaluation) {
  const std::vector<double> specials{kNaN, kInf, -kInf, 0.0, -0.0, std::numeric_limits<double>::max(),
                                     -std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(),
                                     1, -1};
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const testgen::GeneratedProgram g = testgen::generate_program(seed);
    for (const Program* p : {&g.program, &g.plain}) {
      std::vector<Tensor64> inputs = random_inputs(*p, seed);
      size_t k = seed;
      for (Tensor64& t : inputs)
        for (double& v : t.data) {
          k = k * 6364136223846793005u + 1442695040888963407u;
          if ((k >> 60) < 6) v = specials[(k >> 32) % specials.size()];
        }
      EXPECT_NO_THROW(evaluate(*p, inputs, random_block_sizes(*p, seed))) << print_program(*p);
    }
  }
}

// ---- unknown dtypes and ops, garbage --------------------------------------------------------------

TEST(Hostile, UnknownDtypesAndOpsAreClearErrors) {
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases{
      {"(program p (dims (m 2)) (input x f8 [m]) (output y [m] x))", "unknown dtype `f8`"},
      {"(program p (dims (m 2)) (input x complex64 [m]) (output y [m] x))", "expected one of f16 bf16 f32 f64 i32 bool"},
      {"(program p (dims (m 2)) (input x f32 [m]) (output y [m] (cast f128 x)))", "unknown dtype `f128`"},
      {"(program p (dims (m 2)) (input x f32 [m]) (output y [m] (softmax m x)))", "unknown op `softmax`"},
      {"(program p (dims (m 2)) (input x f32 [m]) (output y [m] (sigmoidd x)))", "did you mean `sigmoid`"},
      {"(program p (dims (m 2)) (input x f32 [m]) (output y [m] (reduce m (exp-sum 0) x)))", "exp-sum"},
      {"(program p (dims (m 2)) (input x f32 [m]) (output y [m] (combine m.16 m x)))", "bad axis"},
      {"(program p (dims (m 2)) (input x f32 [m]) (output y [m] (proj 4294967296 x)))", "bad integer"},
      {"(program p (dims (m 2)) (input x f32 [m]) (output y [m] (add x 1e400)))", "bad number"},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of([&] { parse_and_check(c.text); });
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.text << "\n  gave: " << msg;
  }
}

// NUL bytes, bytes that are not UTF-8, CR line ends, a megabyte-long atom:
// errors (or, for CR line ends, a normal parse), never a crash.
TEST(Hostile, GarbageBytesAreErrors) {
  const std::string good = "(program p (dims (m 2)) (input x f32 [m]) (output y [m] (exp x)))";
  std::vector<std::string> bad{
      std::string("(program p\0 (dims (m 2)))", 25),
      "(program p (dims (m 2)) (input x f32 [m]) (output y [m] (\xff\xfe x)))",
      "(program p (dims (m 2)) (input \xc3\xa9 f32 [m]) (output y [m] x))",
      "(program p (dims (" + std::string(1 << 20, 'm') + " 2)) (input x f32 [m]) (output y [m] x))",
      "(program p (dims (m 2)) (input x f32 [m]) (output y [m] (add x " + std::string(1 << 20, '9') + "e-9999999)))",
      std::string(1 << 16, '\0'),
      "",
      ";",
      "(program)",
      "(program p (dims) (output y [] 1))",
  };
  for (const std::string& text : bad) {
    const Ended e = guarded([&] { parse_and_check(text); });
    EXPECT_EQ(e.kind, Ended::ThrewError) << text.substr(0, 80) << ": " << e.text();
  }
  std::string crlf = "(program p\r\n  (dims (m 2))\r\n  (input x f32 [m])\r\n  (output y [m] (exp x)))\r\n";
  EXPECT_TRUE(parse_and_check(crlf).same_as(parse_and_check(good)));
}

// ---- regressions: bugs found by fuzzing and by the tests above -----------------------------------------

// An unknown op with a 16 MB name: "did you mean" must not compute a full
// edit distance against every op name (16M x 40 cells), which takes far
// longer than parsing the text.
TEST(Hostile, LongUnknownNamesAreQuick) {
  const std::string text =
      "(program p (dims (m 2)) (input x f32 [m]) (output y [m] (" + std::string(16 << 20, 'q') + " x)))";
  const Ended e = guarded([&] { parse_program(text); }, 10, 1024);
  EXPECT_EQ(e.kind, Ended::ThrewError) << e.text().substr(0, 200);
  EXPECT_NE(e.message.find("unknown op"), std::string::npos) << e.message.substr(0, 200);
}

// Extents whose product overflows int64: 3 * 6148914691236517206 wraps to 2,
// so a split of a dim of extent 2 into them must not type-check (and the
// product must not be computed with signed overflow, which is undefined).
TEST(Hostile, SplitExtentProductOverflowIsATypeError) {
  const Ended split = guarded([] {
    parse_and_check(
        "(program ovf (dims (d 2) (a 3) (b 6148914691236517206)) (input x f32 [d])"
        " (output y [a b] (split d a b x)))");
  });
  EXPECT_EQ(split.kind, Ended::ThrewError) << split.text();
  EXPECT_NE(split.message.find("extents do not match"), std::string::npos) << split.message;
  const Ended merge = guarded([] {
    parse_and_check(
        "(program ovf (dims (d 2) (a 3) (b 6148914691236517206)) (input x f32 [a b])"
        " (output y [d] (merge a b d x)))");
  });
  EXPECT_EQ(merge.kind, Ended::ThrewError) << merge.text();
}

// Equal infinities are no error: a program compared with itself is
// equivalent even when its outputs hold -inf (a masked row) or +inf
// (max_relative_error took |inf - inf| = NaN for a mismatch).
TEST(Hostile, EqualInfinitiesCompareEqual) {
  const Tensor64 t{{Symbol::intern("m")}, {4}, {-kInf, 1, kInf, kNaN}};
  EXPECT_EQ(max_relative_error(t, t), 0);
  Program p = parse_and_check(
      "(program masked (dims (s 5) (t 5)) (input x f32 [s t])"
      " (output y [s t] (where (le (iota t) (iota s)) x -inf)))");
  const EquivReport r = compare_programs(p, p, 1, 2);
  EXPECT_TRUE(r.equivalent()) << r.max_rel_error;
}

// A NaN literal keeps its meaning through print and parse: "-nan" parses
// as a NaN with the sign bit set, which the printer's "nan" does not give
// back; constants are hash-consed by their bits, so the round trip changes
// the program unless the parser makes every NaN the same.
TEST(Hostile, NanLiteralsRoundTrip) {
  for (const char* lit : {"nan", "-nan"}) {
    const Ended e = guarded([&] {
      Program p = parse_and_check(std::string("(program n (dims (m 2)) (input x f32 [m]) (output y [m] (add x ") +
                                  lit + ")))");
      Program q = parse_and_check(print_program(p));
      if (!p.same_as(q)) throw std::runtime_error(print_program(p) + "re-parses to a different program");
    });
    EXPECT_EQ(e.kind, Ended::Returned) << lit << ": " << e.text();
  }
}

// A program built in memory may nest deeper than the text format allows;
// printing it must still give text that parses (the printer binds deep
// subterms with lets), and evaluation must not recurse.
TEST(Hostile, DeepProgramsBuiltInMemoryPrintToParseableText) {
  Program p;
  p.name = Symbol::intern("deep");
  const Symbol m = Symbol::intern("m");
  p.dims.declare(m, 2);
  NodeId v = p.add_input(Symbol::intern("x"), DType::F32, {m});
  for (int i = 0; i < 100000; ++i) v = p.add(Op::Neg, attrs_none(), std::vector<NodeId>{v});
  p.add_output(Symbol::intern("y"), {m}, v);
  const Ended e = guarded([&] {
    typecheck(p);
    Tensor64 x{{m}, {2}, {0.5, -1}};
    if (evaluate(p, {x})[0].data != x.data) throw std::runtime_error("wrong value");
    Program q = parse_and_check(print_program(p));
    if (!p.same_as(q)) throw std::runtime_error("round trip changed the program");
  });
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// A 70000-operand tuple through the e-graph: refused with a clear error
// (an e-node keeps its child count in 16 bits), never truncated into a
// wrong e-node.
TEST(Hostile, WideTupleThroughTheEGraph) {
  const std::string text = "(program wide (dims (m 2)) (input x f32 [m]) (output y [m] (proj 69999 (tuple" +
                           repeat(" x", 69999) + " (neg x)))))";
  const Ended e = guarded([&] {
    Program p = parse_and_check(text);
    EGraph g;
    load_program(g, p);
  });
  EXPECT_EQ(e.kind, Ended::ThrewError) << e.text();
  EXPECT_NE(e.message.find("at most 65535"), std::string::npos) << e.message;
}

// Rule patterns nest as deep as the reader allows; parsing one must not
// overflow the stack (the pattern parser recursed once per level). The parse
// runs on a 256 KiB stack, so a per-level recursion fails here in every
// build, not only under ASan's larger frames.
TEST(Hostile, DeepPatternsAreParsedWithoutRecursion) {
  const size_t depth = size_t(kSExprMaxDepth) - 10;
  const std::string text = repeat("(neg ", depth) + "?x" + repeat(")", depth);
  const Ended e = guarded([&] {
    on_small_stack([&] {
      Pattern pat = Pattern::parse(text);
      if (pat.nodes().size() != depth + 1) throw std::runtime_error("wrong pattern size");
      if (pat.atoms().size() != depth) throw std::runtime_error("wrong number of atoms");
      if (pat.text() != text) throw std::runtime_error("text changed");
    });
  });
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// Past the reader's limit a pattern is an error at the position, in the left
// side, the right side and the conditions of a rule.
TEST(Hostile, PatternsNestedTooDeepAreErrors) {
  const size_t depth = 100000;
  const std::string deep = repeat("(neg ", depth) + "?x" + repeat(")", depth);
  const std::string limit = "nesting deeper than " + std::to_string(kSExprMaxDepth);
  const std::string at = ":1:" + std::to_string(5 * kSExprMaxDepth + 1) + ": ";
  for (int side = 0; side < 3; ++side) {
    const Ended e = guarded([&] {
      on_small_stack([&] {
        if (side == 0) rewrite("deep", deep, "?x");
        if (side == 1) rewrite("deep", "(neg ?x)", deep);
        if (side == 2) rewrite("deep", "(neg ?x)", "?x", deep);
      });
    });
    EXPECT_EQ(e.kind, Ended::ThrewError) << side << ": " << e.text();
    EXPECT_NE(e.message.find(limit), std::string::npos) << e.message;
    EXPECT_NE(e.message.find(at), std::string::npos) << e.message;
  }
}

// Deep conditions are read, refused (no such condition) and freed without
// recursion; deep schedules are refused at a small documented depth.
TEST(Hostile, DeepConditionsAndSchedulesEndInErrors) {
  const size_t depth = size_t(kSExprMaxDepth) - 10;
  const std::string deep = repeat("(neg ", depth) + "?x" + repeat(")", depth);
  Ended e = guarded([&] { on_small_stack([&] { rewrite("deep", "(neg ?x)", "?x", "(no-such-condition " + deep + ")"); }); });
  EXPECT_EQ(e.kind, Ended::ThrewError) << e.text();
  EXPECT_NE(e.message.find("no-such-condition"), std::string::npos) << e.message;
  const std::string schedule = repeat("(seq ", depth) + "(run a)" + repeat(")", depth);
  e = guarded([&] { on_small_stack([&] { Schedule::parse(schedule, "deep.sched"); }); });
  EXPECT_EQ(e.kind, Ended::ThrewError) << e.text();
  EXPECT_NE(e.message.find("schedules nest at most 64 levels"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("deep.sched:1:"), std::string::npos) << e.message;
  // A schedule of ordinary depth still parses.
  EXPECT_NO_THROW(Schedule::parse(repeat("(seq ", 8) + "(run a)" + repeat(")", 8), "ok.sched"));
}

// A rule as deep as the reader allows is built, matched and applied: the
// matcher and the right-side builder walk the pattern without recursion.
// `cancel` matches a chain of that depth; `grow` builds one.
TEST(Hostile, DeepRulesMatchAndApply) {
  const size_t depth = size_t(kSExprMaxDepth) - 10;  // even: neg^depth x is x
  const Ended e = guarded([&] {
    on_small_stack([&] {
      EGraph g;
      std::vector<EClassId> in;
      for (const char* n : {"x", "z"}) {
        const Symbol name = Symbol::intern(n);
        g.declare_input(InputDecl{name, DType::F32, {}, NodeId{}, {}});
        in.push_back(g.add(Op::Input, {name.raw(), 0, 0}, {}));
      }
      EClassId chain = in[0];
      for (size_t i = 0; i < depth; ++i) {
        const EClassId kids[] = {chain};
        chain = g.add(Op::Neg, attrs_none(), kids);
      }
      const EClassId exp_kids[] = {in[1]};
      g.add(Op::Exp, attrs_none(), exp_kids);
      const size_t before = g.num_nodes();
      const std::string negs = repeat("(neg ", depth), closes = repeat(")", depth);
      Runner runner(g);
      runner
          .with_rules("deep", {rewrite("cancel", negs + "?x" + closes, "?x"),
                               rewrite("grow", "(exp ?y)", "(exp " + negs + "?y" + closes + ")")})
          .with_iter_limit(1)
          .with_node_limit(1'000'000)
          .with_time_limit(60);  // not the 5 s default: sanitizers on a busy machine
      const RunReport r = runner.run();
      const std::string stop = " (stopped: " + std::string(stop_reason_name(r.stop)) + ")";
      if (g.find(chain) != g.find(in[0])) throw std::runtime_error("cancel did not apply" + stop);
      if (g.num_nodes() < before + depth) throw std::runtime_error("grow did not build its chain" + stop);
    });
  }, 90);
  EXPECT_EQ(e.kind, Ended::Returned) << e.text();
}

// A pattern node's child count is 16 bits in the compiled matcher, as in an
// e-node: a wider pattern is an error naming the limit, never a truncated
// node that matches something else (65536 children cut to 16 bits is 0).
TEST(Hostile, WidePatternsAreRefusedNotTruncated) {
  const size_t limit = Pattern::kMaxChildren;
  ASSERT_EQ(limit, 65535u);
  const std::string too_wide = "(tuple" + repeat(" ?a", limit + 1) + ")";
  const std::string message = error_of([&] { Pattern::parse(too_wide); });
  EXPECT_NE(message.find("<pattern>:1:1: "), std::string::npos) << message.substr(0, 200);
  EXPECT_NE(message.find("tuple has 65536 children"), std::string::npos) << message.substr(0, 200);
  EXPECT_NE(message.find("at most 65535"), std::string::npos) << message.substr(0, 200);
  // On either side of a rule, and nested.
  const std::string nested = "(neg (proj 0 " + too_wide + "))";
  EXPECT_NE(error_of([&] { rewrite("wide", nested, "?a"); }).find("at most 65535"), std::string::npos);
  EXPECT_NE(error_of([&] { rewrite("wide", "(neg ?a)", nested); }).find("at most 65535"), std::string::npos);

  // At the limit: the node compiles with every child and matches the e-node
  // of the same width, and only that one.
  const std::string widest = "(tuple" + repeat(" ?a", limit - 1) + " ?b)";
  const Pattern p = Pattern::parse(widest);
  ASSERT_EQ(p.atoms().size(), 1u);
  EXPECT_EQ(p.atoms()[0].num_children, limit);
  EXPECT_EQ(p.child_ops().size(), limit);
  EGraph g;
  std::vector<EClassId> leaves;
  for (const char* n : {"x", "y"}) {
    const Symbol name = Symbol::intern(n);
    g.declare_input(InputDecl{name, DType::F32, {}, NodeId{}, {}});
    leaves.push_back(g.add(Op::Input, {name.raw(), 0, 0}, {}));
  }
  std::vector<EClassId> kids(limit, leaves[0]);
  kids.back() = leaves[1];
  const EClassId wide = g.add(Op::Tuple, attrs_none(), kids);
  kids.pop_back();
  g.add(Op::Tuple, attrs_none(), kids);  // one child short: no match
  g.rebuild();
  struct Count : MatchSink {
    std::vector<uint32_t> roots;
    bool on_match(const uint32_t* subst) override {
      roots.push_back(subst[0]);
      return true;
    }
  } sink;
  Matcher m;
  EXPECT_EQ(m.search(g, p, SearchOptions{}, sink), SearchEnd::Complete);
  ASSERT_EQ(sink.roots.size(), 1u);
  EXPECT_EQ(sink.roots[0], g.find(wide).v);
}

}  // namespace
}  // namespace eqf
