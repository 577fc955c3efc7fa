#include "eqiforge/egraph/ac_workload.h"

#include <string>

namespace eqf {

EClassId add_left_sum(EGraph& g, int n) {
  EClassId acc;
  for (int i = 0; i < n; ++i) {
    Symbol name = Symbol::intern("x" + std::to_string(i));
    g.declare_input(InputDecl{name, DType::F32, {}, NodeId{}, {}});
    EClassId leaf = g.add(Op::Input, {name.raw(), 0, 0}, {});
    if (i == 0) {
      acc = leaf;
      continue;
    }
    EClassId kids[] = {acc, leaf};
    acc = g.add(Op::Add, attrs_none(), kids);
  }
  return acc;
}

}  // namespace eqf
