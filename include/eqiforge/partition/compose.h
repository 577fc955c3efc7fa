// Composing two programs along their boundary tensors (DESIGN §5, "large
// programs": composition without materialized boundaries).
//
// A partition's subgraphs meet at boundary tensors: the producer outputs
// them, the consumer reads them as inputs. compose(producer, consumer) is
// one program that feeds each such input from the producer's value instead
// of from memory. For tiled programs (extraction's candidates) that is where
// fusion across a cut comes from: where the consumer reads the boundary
// through a chain of partitions over the same (axis, dim) pairs that the
// producer combined it with, the consumer takes the producer's tiles
// directly -- (partition a d (combine a d X)) is X -- and kernel formation
// then puts both pieces in one kernel. Elsewhere the producer's combined
// value is used as it is (a buffer between kernels, as before, but in one
// module).
//
// Names: inputs of the two programs with the same name are the same tensor
// (a partition's subgraphs keep the original program's input names); an
// input of the consumer named like an output of the producer is a boundary.
// Dims with the same name must have the same extent.
#pragma once

#include <string>
#include <vector>

#include "eqiforge/ir/program.h"

namespace eqf {

struct ComposeOptions {
  // Producer outputs that stay outputs of the composed program although the
  // consumer reads them (other subgraphs or the user read them too). The
  // producer's outputs the consumer does not read always stay.
  std::vector<std::string> keep;
  std::string name;  // the composed program's name; empty: "<producer>_<consumer>"
};

struct Composed {
  Program program;  // type-checked
  // Boundaries whose tiles the consumer took directly (no combine between
  // the two pieces), and those it read whole.
  std::vector<std::string> fused, materialized;
};

// Throws eqf::Error naming the problem (an input and an output with the same
// name but different types, dims of one name with different extents, a
// composed program that does not type-check).
Composed compose(const Program& producer, const Program& consumer, const ComposeOptions& options = {});

}  // namespace eqf
