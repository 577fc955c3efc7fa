// `eqiforge-opt partition`: the partition of a large program, as a table or
// as the JSON object the runtime composes subgraph searches from.
#include "tools/verbs_partition.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>

#include "eqiforge/cost/target.h"
#include "eqiforge/ir/parse.h"
#include "eqiforge/partition/compose.h"
#include "eqiforge/partition/partition.h"
#include "tools/verb_util.h"

namespace eqf::cli {
namespace {

std::string hex(uint64_t h) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Subgraph indices by work: estimated time where there is one, else flops,
// then bytes; the dearest first.
std::vector<size_t> ranking(const Partition& part) {
  std::vector<size_t> order(part.subgraphs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Subgraph &x = part.subgraphs[a], &y = part.subgraphs[b];
    if (x.estimate_s != y.estimate_s) return x.estimate_s > y.estimate_s;
    if (x.flops != y.flops) return x.flops > y.flops;
    return x.bytes > y.bytes;
  });
  return order;
}

std::vector<std::string> op_names(const Program& p, const Subgraph& sg) {
  std::vector<std::string> out;
  for (NodeId n : sg.nodes) out.emplace_back(op_info(p.node(n).op).name);
  return out;
}

std::string node_label(const Program& p, NodeId n) {
  Symbol let = p.name_of(n);
  return let.valid() ? std::string(let.str()) : "%" + std::to_string(n.v);
}

void print_json(const Program& p, const Partition& part) {
  std::vector<size_t> rank = ranking(part);
  std::vector<size_t> rank_of(rank.size());
  for (size_t i = 0; i < rank.size(); ++i) rank_of[rank[i]] = i + 1;
  std::cout << "{\"program\": " << json_quoted(p.name.str()) << ", \"max_ops\": " << part.max_ops
            << ", \"ops\": " << part.total_ops << ", \"order\": " << json_quoted(part.order)
            << ", \"boundary_bytes\": " << part.boundary_bytes << ", \"period\": " << part.period
            << ", \"units\": " << part.units << ",\n \"subgraphs\": [";
  for (size_t i = 0; i < part.subgraphs.size(); ++i) {
    const Subgraph& sg = part.subgraphs[i];
    std::cout << (i ? ",\n  " : "\n  ") << "{\"index\": " << i << ", \"name\": " << json_quoted(sg.program.name.str())
              << ", \"hash\": " << json_quoted(hex(sg.hash)) << ", \"rank\": " << rank_of[i]
              << ", \"ops\": " << sg.ops << ", \"flops\": " << number(sg.flops) << ", \"bytes\": " << sg.bytes
              << ", \"boundary_in_bytes\": " << sg.boundary_in_bytes
              << ", \"boundary_out_bytes\": " << sg.boundary_out_bytes
              << ", \"estimated_us\": " << number(sg.estimate_s * 1e6) << ", \"op_names\": [";
    std::vector<std::string> names = op_names(p, sg);
    for (size_t k = 0; k < names.size(); ++k) std::cout << (k ? ", " : "") << json_quoted(names[k]);
    std::cout << "], \"nodes\": [";
    for (size_t k = 0; k < sg.nodes.size(); ++k) std::cout << (k ? ", " : "") << json_quoted(node_label(p, sg.nodes[k]));
    std::cout << "], \"inputs\": [";
    for (size_t k = 0; k < sg.inputs.size(); ++k) {
      const SubgraphInput& in = sg.inputs[k];
      std::cout << (k ? ", " : "") << "{\"name\": " << json_quoted(sg.program.inputs()[k].name.str());
      if (in.boundary)
        std::cout << ", \"boundary\": " << in.index << "}";
      else
        std::cout << ", \"input\": " << in.index << "}";
    }
    std::cout << "], \"outputs\": [";
    for (size_t k = 0; k < sg.outputs.size(); ++k) {
      const SubgraphOutput& out = sg.outputs[k];
      std::cout << (k ? ", " : "") << "{\"name\": " << json_quoted(sg.program.outputs()[k].name.str());
      if (out.original_output >= 0) std::cout << ", \"output\": " << out.original_output;
      if (out.boundary >= 0) std::cout << ", \"boundary\": " << out.boundary;
      std::cout << "}";
    }
    std::cout << "],\n   \"program\": " << json_quoted(print_program(sg.program)) << "}";
  }
  std::cout << "],\n \"boundaries\": [";
  for (size_t i = 0; i < part.boundaries.size(); ++i) {
    const BoundaryTensor& b = part.boundaries[i];
    std::cout << (i ? ",\n  " : "\n  ") << "{\"index\": " << i << ", \"name\": " << json_quoted(b.name)
              << ", \"node\": " << json_quoted(node_label(p, b.node)) << ", \"dtype\": "
              << json_quoted(dtype_name(b.dtype)) << ", \"dims\": [";
    for (size_t k = 0; k < b.layout.size(); ++k) std::cout << (k ? ", " : "") << json_quoted(b.layout[k].str());
    std::cout << "], \"shape\": [";
    for (size_t k = 0; k < b.shape.size(); ++k) std::cout << (k ? ", " : "") << b.shape[k];
    std::cout << "], \"bytes\": " << b.bytes << ", \"producer\": " << b.producer << ", \"consumers\": [";
    for (size_t k = 0; k < b.consumers.size(); ++k) std::cout << (k ? ", " : "") << b.consumers[k];
    std::cout << "]}";
  }
  std::cout << "],\n \"outputs\": [";
  for (size_t i = 0; i < part.outputs.size(); ++i) {
    const OutputSource& o = part.outputs[i];
    std::cout << (i ? ", " : "") << "{\"name\": " << json_quoted(p.outputs()[i].name.str())
              << ", \"subgraph\": " << o.subgraph << ", \"index\": " << o.output << "}";
  }
  std::cout << "]}\n";
}

std::string bytes_text(int64_t b) {
  char buf[32];
  if (b < 4096)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else if (b < (int64_t(4) << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / (1 << 20));
  return buf;
}

void print_text(const Program& p, const Partition& part) {
  size_t distinct = 0;
  {
    std::vector<uint64_t> hashes;
    for (const Subgraph& sg : part.subgraphs) hashes.push_back(sg.hash);
    std::sort(hashes.begin(), hashes.end());
    distinct = size_t(std::unique(hashes.begin(), hashes.end()) - hashes.begin());
  }
  std::cout << "partition of " << p.name.str() << ": " << part.total_ops << " operators, at most " << part.max_ops
            << " per subgraph; " << part.subgraphs.size() << " subgraphs (" << distinct << " distinct), "
            << bytes_text(part.boundary_bytes) << " of boundary traffic (order: " << part.order;
  if (part.period > 0) std::cout << "; cuts repeat every " << part.period << " operators, " << part.units << " times";
  std::cout << ")\n";
  for (size_t i : ranking(part)) {
    const Subgraph& sg = part.subgraphs[i];
    std::cout << "  subgraph " << i << " [" << hex(sg.hash) << "]: " << sg.ops << " ops, " << number(sg.flops)
              << " flops, " << bytes_text(sg.bytes) << " moved (boundary in " << bytes_text(sg.boundary_in_bytes)
              << ", out " << bytes_text(sg.boundary_out_bytes) << ")";
    if (sg.estimate_s > 0) std::cout << ", ~" << number(sg.estimate_s * 1e6) << " us";
    std::cout << "\n    ";
    for (size_t k = 0; k < sg.nodes.size(); ++k)
      std::cout << (k ? " " : "") << node_label(p, sg.nodes[k]) << ":" << op_info(p.node(sg.nodes[k]).op).name;
    std::cout << "\n";
  }
  for (const BoundaryTensor& b : part.boundaries) {
    std::cout << "  boundary " << b.name << " " << dtype_name(b.dtype) << "[";
    for (size_t k = 0; k < b.layout.size(); ++k) std::cout << (k ? " " : "") << b.layout[k].str() << "=" << b.shape[k];
    std::cout << "] " << bytes_text(b.bytes) << ": subgraph " << b.producer << " ->";
    for (int c : b.consumers) std::cout << " " << c;
    std::cout << "\n";
  }
}

}  // namespace

int verb_partition(const Args& args) {
  Program p = load_checked(args.operand(0));
  PartitionOptions options;
  options.max_ops = int(args.integer("--max-ops", options.max_ops, 1, 1 << 30));
  if (args.has("--target")) {
    Target t = load_target(*args.value("--target"));
    options.bytes_per_s = t.dram_bytes_per_s;
    options.flops_per_s = t.fp_flops_per_s;
    options.mma_flops_per_s = t.mma_flops_per_s;
  }
  Partition part = partition_program(p, options);
  if (args.has("--json"))
    print_json(p, part);
  else
    print_text(p, part);
  return kExitOk;
}

int verb_compose(const Args& args) {
  Program producer = load_checked(args.operand(0));
  Program consumer = load_checked(args.operand(1));
  ComposeOptions options;
  options.keep = args.values("--keep");
  if (args.has("--name")) options.name = *args.value("--name");
  Composed c = compose(producer, consumer, options);
  if (!args.has("--json")) {
    std::cout << print_program(c.program);
    return kExitOk;
  }
  auto names = [](const std::vector<std::string>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + json_quoted(v[i]);
    return out + "]";
  };
  std::cout << "{\"fused\": " << names(c.fused) << ", \"materialized\": " << names(c.materialized)
            << ", \"program\": " << json_quoted(print_program(c.program)) << "}\n";
  return kExitOk;
}

}  // namespace eqf::cli
