// Freeing S-expression trees without recursion.
//
// An SExpr's implicit destructor recurses once per nesting level; at
// kSExprMaxDepth levels that takes megabytes of stack in unoptimized builds.
// Code that may hold trees read from untrusted text empties them with
// release_sexprs (or a ReleaseSExprs guard, which also runs on exceptions).
#pragma once

#include <vector>

#include "eqiforge/ir/sexpr.h"

namespace eqf {

// Destroys every expression of `exprs`, children before parents, using a
// heap worklist; `exprs` is left empty.
void release_sexprs(std::vector<SExpr>& exprs);

class ReleaseSExprs {
 public:
  explicit ReleaseSExprs(std::vector<SExpr>& exprs) : exprs_(exprs) {}
  ~ReleaseSExprs() { release_sexprs(exprs_); }
  ReleaseSExprs(const ReleaseSExprs&) = delete;
  ReleaseSExprs& operator=(const ReleaseSExprs&) = delete;

 private:
  std::vector<SExpr>& exprs_;
};

}  // namespace eqf
