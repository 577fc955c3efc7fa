// Composing two programs along their boundary tensors (compose.h).
#include "eqiforge/partition/compose.h"

#include <algorithm>
#include <unordered_map>

#include "eqiforge/ir/diagnostic.h"
#include "eqiforge/ir/typecheck.h"

namespace eqf {
namespace {

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string layout_text(const std::vector<Symbol>& layout) {
  std::string out = "[";
  for (size_t i = 0; i < layout.size(); ++i) out += (i ? " " : "") + std::string(layout[i].str());
  return out + "]";
}

// Copies the producer's and then the consumer's nodes that the kept outputs
// reach into one program, children first (memoized per source node).
class Composer {
 public:
  Composer(const Program& producer, const Program& consumer, Program& out)
      : producer_(producer), consumer_(consumer), out_(out), from_producer_(producer.size()),
        from_consumer_(consumer.size()) {}

  // The producer's output of each boundary the consumer reads, by name.
  void add_boundary(Symbol name, NodeId producer_value) { boundary_[name.raw()] = producer_value; }
  void add_input(Symbol name, NodeId node) { inputs_[name.raw()] = node; }

  NodeId producer_node(NodeId n) {
    NodeId& done = from_producer_[n.v];
    if (done.v != kUnset) return done;
    const Node& node = producer_.node(n);
    NodeId built;
    if (node.op == Op::Input) {
      built = inputs_.at(node.attrs[0]);
    } else {
      std::vector<NodeId> kids;
      for (NodeId c : producer_.children(n)) kids.push_back(producer_node(c));
      built = out_.add(node.op, node.attrs, kids, node.loc);
    }
    return from_producer_[n.v] = built;
  }

  NodeId consumer_node(NodeId n) {
    NodeId& done = from_consumer_[n.v];
    if (done.v != kUnset) return done;
    const Node& node = consumer_.node(n);
    NodeId built;
    if (node.op == Op::Partition) {
      if (std::optional<NodeId> direct = direct_tiles(n)) {
        built = *direct;
        return from_consumer_[n.v] = built;
      }
    }
    if (node.op == Op::Input) {
      auto b = boundary_.find(node.attrs[0]);
      if (b != boundary_.end()) {
        materialized_.push_back(std::string(attr_sym(node.attrs, 0).str()));
        built = producer_node(b->second);
      } else {
        built = inputs_.at(node.attrs[0]);
      }
    } else {
      std::vector<NodeId> kids;
      for (NodeId c : consumer_.children(n)) kids.push_back(consumer_node(c));
      built = out_.add(node.op, node.attrs, kids, node.loc);
    }
    return from_consumer_[n.v] = built;
  }

  std::vector<std::string> fused_, materialized_;

 private:
  static constexpr uint32_t kUnset = 0xffffffffu;

  // Partition node n of the consumer, when it tops a chain of partitions
  // over a boundary input: the producer's tiles, where the chain undoes the
  // producer's combines. Innermost partition against outermost combine,
  // pair by pair: (partition a d (combine a d X)) is X; partitions left over
  // once every combine is undone are applied to X. The same pairs in
  // another order are undone together too: partitions over distinct axes
  // commute (the composed program is type-checked, and the caller verifies
  // it against the reference). nullopt: some combine stays, the consumer
  // reads the boundary whole.
  std::optional<NodeId> direct_tiles(NodeId top) {
    std::vector<Attrs> parts;  // top-down
    NodeId cur = top;
    while (consumer_.node(cur).op == Op::Partition) {
      parts.push_back(consumer_.node(cur).attrs);
      cur = consumer_.children(cur)[0];
    }
    const Node& leaf = consumer_.node(cur);
    if (leaf.op != Op::Input) return std::nullopt;
    auto b = boundary_.find(leaf.attrs[0]);
    if (b == boundary_.end()) return std::nullopt;
    std::vector<Attrs> combines;  // top-down
    NodeId inner = b->second;
    while (producer_.node(inner).op == Op::Combine) {
      combines.push_back(producer_.node(inner).attrs);
      inner = producer_.children(inner)[0];
    }
    if (combines.empty() || parts.size() < combines.size()) return std::nullopt;
    // parts, bottom-up, against combines, top-down.
    std::vector<Attrs> bottom_up(parts.rbegin(), parts.rend());
    std::vector<Attrs> undone(bottom_up.begin(), bottom_up.begin() + ptrdiff_t(combines.size()));
    bool nested = undone == combines;
    if (!nested) {
      std::vector<Attrs> a = undone, c = combines;
      std::sort(a.begin(), a.end());
      std::sort(c.begin(), c.end());
      if (a != c) return std::nullopt;
    }
    NodeId x = producer_node(inner);
    for (size_t i = combines.size(); i < bottom_up.size(); ++i) {
      NodeId kid[] = {x};
      x = out_.add(Op::Partition, bottom_up[i], kid);
    }
    std::string name(attr_sym(leaf.attrs, 0).str());
    if (!contains(fused_, name)) fused_.push_back(name);
    return x;
  }

  const Program& producer_;
  const Program& consumer_;
  Program& out_;
  std::vector<NodeId> from_producer_, from_consumer_;
  std::unordered_map<uint32_t, NodeId> boundary_;  // consumer input name -> producer value
  std::unordered_map<uint32_t, NodeId> inputs_;    // input name -> the composed program's input node
};

void declare_dims(const Program& from, Program& out) {
  for (const DimInfo& d : from.dims.all()) {
    if (d.collected_from) {
      out.dims.declare_collected(*d.collected_from);
      continue;
    }
    const DimInfo* have = out.dims.find(d.name);
    if (!have) {
      out.dims.declare_like(d);
    } else if (have->collected_from || have->extent != d.extent) {
      throw Error("compose: dim " + std::string(d.name.str()) + " has extent " + std::to_string(d.extent) +
                  " in " + std::string(from.name.str()) + " but not in the other program");
    }
  }
}

}  // namespace

Composed compose(const Program& producer, const Program& consumer, const ComposeOptions& options) {
  if (producer.types().empty() || consumer.types().empty())
    throw Error("compose: both programs must be type-checked");
  Composed result;
  Program& out = result.program;
  out.file = consumer.file;
  out.name = Symbol::intern(options.name.empty()
                                ? std::string(producer.name.str()) + "_" + std::string(consumer.name.str())
                                : options.name);
  declare_dims(producer, out);
  declare_dims(consumer, out);
  Composer composer(producer, consumer, out);

  // Boundaries: consumer inputs named like producer outputs, of the same type.
  std::vector<std::string> read;
  for (const InputDecl& in : consumer.inputs()) {
    for (const OutputDecl& o : producer.outputs()) {
      if (o.name != in.name) continue;
      const TensorType& t = producer.type(o.value).get().tensor();
      if (t.dtype != in.dtype || o.layout != in.layout)
        throw Error("compose: " + std::string(in.name.str()) + " is output as " + std::string(dtype_name(t.dtype)) +
                    layout_text(o.layout) + " but read as " + std::string(dtype_name(in.dtype)) +
                    layout_text(in.layout));
      composer.add_boundary(in.name, o.value);
      read.emplace_back(in.name.str());
    }
  }
  // Inputs: the producer's, then the consumer's other ones; one name, one tensor.
  auto declare_input = [&](const InputDecl& in) {
    for (const InputDecl& have : out.inputs()) {
      if (have.name != in.name) continue;
      if (have.dtype != in.dtype || have.layout != in.layout)
        throw Error("compose: input " + std::string(in.name.str()) + " is " + std::string(dtype_name(have.dtype)) +
                    layout_text(have.layout) + " in one program and " + std::string(dtype_name(in.dtype)) +
                    layout_text(in.layout) + " in the other");
      return;
    }
    composer.add_input(in.name, out.add_input(in.name, in.dtype, in.layout, in.loc));
  };
  for (const InputDecl& in : producer.inputs()) declare_input(in);
  for (const InputDecl& in : consumer.inputs())
    if (!contains(read, in.name.str())) declare_input(in);

  for (const OutputDecl& o : producer.outputs())
    if (!contains(read, o.name.str()) || contains(options.keep, o.name.str()))
      out.add_output(o.name, o.layout, composer.producer_node(o.value), o.loc);
  for (const OutputDecl& o : consumer.outputs()) out.add_output(o.name, o.layout, composer.consumer_node(o.value), o.loc);
  result.fused = composer.fused_;
  for (const std::string& m : composer.materialized_)
    if (!contains(result.materialized, m)) result.materialized.push_back(m);
  try {
    typecheck(out);
  } catch (const Error& e) {
    throw Error(std::string("compose: the composed program does not type-check: ") + e.what());
  }
  return result;
}

}  // namespace eqf
