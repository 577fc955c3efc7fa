// Constant folding of literal-typed nodes (see eqiforge/ir/fold.h).
#include "eqiforge/ir/fold.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "eqiforge/ir/diagnostic.h"

namespace eqf {

double fold_literal(const Program& p, NodeId n) {
  std::vector<double> kids;
  if (p.node(n).op != Op::Const)
    for (NodeId c : p.children(n)) kids.push_back(fold_literal(p, c));
  return constant_op(p, n, kids);
}

double gelu_value(double x) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); }

double constant_op(const Program& p, NodeId n, std::span<const double> kids) {
  const Node& node = p.node(n);
  auto kid = [&](size_t i) { return kids[i]; };
  switch (node.op) {
    case Op::Const:
      return attr_f64(node.attrs);
    case Op::Add:
      return kid(0) + kid(1);
    case Op::Sub:
      return kid(0) - kid(1);
    case Op::Mul:
      return kid(0) * kid(1);
    case Op::Div:
      return kid(0) / kid(1);
    case Op::Max2:
      return std::max(kid(0), kid(1));
    case Op::Min2:
      return std::min(kid(0), kid(1));
    case Op::Neg:
      return -kid(0);
    case Op::Exp:
      return std::exp(kid(0));
    case Op::Log:
      return std::log(kid(0));
    case Op::Sqrt:
      return std::sqrt(kid(0));
    case Op::Rsqrt:
      return 1.0 / std::sqrt(kid(0));
    case Op::Sigmoid:
      return 1.0 / (1.0 + std::exp(-kid(0)));
    case Op::Silu:
      return kid(0) / (1.0 + std::exp(-kid(0)));
    case Op::Gelu:
      return gelu_value(kid(0));
    case Op::Tanh:
      return std::tanh(kid(0));
    case Op::Pow:
      return std::pow(kid(0), attr_f64(node.attrs));
    case Op::Cast: {
      DType to = attr_dtype(node.attrs, 0);
      if (to == DType::I32) return std::trunc(kid(0));
      if (to == DType::Bool) return kid(0) != 0 ? 1.0 : 0.0;
      return kid(0);
    }
    case Op::Lt:
      return kid(0) < kid(1) ? 1.0 : 0.0;
    case Op::Le:
      return kid(0) <= kid(1) ? 1.0 : 0.0;
    case Op::Eq:
      return kid(0) == kid(1) ? 1.0 : 0.0;
    case Op::Where:
      return kid(0) != 0 ? kid(1) : kid(2);
    default:
      throw Error(p.file, node.loc,
                  std::string(op_info(node.op).name) + " has a literal type but no constant value");
  }
}

}  // namespace eqf
