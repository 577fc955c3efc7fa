// A generator of random well-typed IR programs, deterministic in a seed.
//
// Programs are random DAGs over the IR's operators: pointwise ops with
// broadcasting by name and literal operands, predicates and `where` masks
// built from `iota`, casts, reductions (sum, max, and tuple reductions with
// an exp-sum repair), matmuls with batch dims, softmax-like chains, and the
// layout ops split / merge / rename. Extents are drawn from small odd, prime
// and power-of-two values (1 included), so ragged blocks are the rule.
//
// With `tiled`, some subterms are written in a tile-level form -- a
// pointwise op under partition/combine, a reduction or matmul split on an
// axis and finished by preduce (one or two levels), a reduction finished
// through collect, an online-softmax denominator by a repaired tuple
// reduction -- and the generator builds, in lockstep, `plain`: the same
// program with each of those subterms in its high-level form. The two are
// equivalent, so they check the reference interpreter against itself; a
// whole-optimizer fuzzer feeds `plain` to the optimizer and holds every
// candidate against it.
//
// Every node is typed with infer_type before it is added, so the programs
// are well typed by construction (typecheck() is run on both before they
// are returned). Values stay at most `max_rank` dims, and every dim at most
// `max_extent`, so evaluation is cheap.
#pragma once

#include <cstdint>
#include <string>

#include "eqiforge/ir/program.h"

namespace eqf::testgen {

struct GenOptions {
  int min_ops = 3;          // operator applications drawn (a chain counts once)
  int max_ops = 16;
  int max_inputs = 4;
  int max_outputs = 3;
  int max_rank = 3;         // dims of any value
  int64_t max_extent = 17;  // extents are drawn from {1 2 3 4 5 7 8 9 11 12 13 16 17} up to this
  bool tiled = true;        // tile-level subterms, with their high-level twins in `plain`
  // Ops that turn finite inputs into NaN or Inf (log, sqrt, rsqrt, div,
  // pow with a negative exponent). Off for programs whose values must stay
  // finite.
  bool nonfinite_ops = true;
  // Outputs are values of at least this many dims (values of fewer are left
  // unused; with none left, the output is the negated first input). 1 keeps
  // scalars out of the outputs.
  int min_output_rank = 0;
  // Without nonfinite_ops, also keep every value's bound below the largest
  // finite value of its dtype (65504 for f16), so that a kernel computing in
  // the declared dtypes does not overflow where the float64 reference does
  // not.
  bool dtype_range = false;
};

struct GeneratedProgram {
  Program program;    // type-checked; may hold tile-level subterms
  Program plain;      // the same computation at the high level only
  int rewritten_terms = 0;  // subterms written differently in `program` and `plain`
  uint64_t seed = 0;
};

GeneratedProgram generate_program(uint64_t seed, const GenOptions& options = {});

}  // namespace eqf::testgen
