// Reading hardware profiles (data/targets/*.json).
#include "eqiforge/cost/target.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cost/json.h"
#include "eqiforge/ir/diagnostic.h"

namespace eqf {
namespace {

namespace fs = std::filesystem;

const json::Value* require(const json::Value& root, const char* key, const std::string& file) {
  const json::Value* v = root.find(key);
  if (!v) throw Error(file, root.loc, std::string("target profile lacks \"") + key + "\"");
  return v;
}

double number(const json::Value& root, const char* key, const std::string& file, double min, bool integer) {
  const json::Value* v = require(root, key, file);
  if (v->kind != json::Value::Kind::Number)
    throw Error(file, v->loc, std::string("\"") + key + "\" must be a number");
  if (!(v->number >= min))
    throw Error(file, v->loc, std::string("\"") + key + "\" must be at least " + std::to_string(min) + ", got " +
                                  std::to_string(v->number));
  if (integer && v->number != std::floor(v->number))
    throw Error(file, v->loc, std::string("\"") + key + "\" must be an integer");
  return v->number;
}

std::string text(const json::Value& root, const char* key, const std::string& file) {
  const json::Value* v = require(root, key, file);
  if (v->kind != json::Value::Kind::String)
    throw Error(file, v->loc, std::string("\"") + key + "\" must be a string");
  return v->string;
}

std::string exe_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.parent_path().string();
}

}  // namespace

// Fields carry their units in their names ("dram_GBps"), so a profile reads
// on its own.
Target parse_target(std::string_view json_text, const std::string& file) {
  json::Value root = json::parse(json_text, file);
  if (root.kind != json::Value::Kind::Object) throw Error(file, root.loc, "a target profile is a JSON object");
  static const std::set<std::string, std::less<>> known = {
      "name",           "description",     "sources",         "sms",
      "dram_GBps",      "kernel_GBps",     "sm_GBps",         "stream_half_MiB",         "mma_TFLOPs",      "fp32_TFLOPs",
      "launch_us",      "l2_MiB",          "l2_GBps",          "smem_per_program_KiB", "registers_per_program_KiB",
      "pipeline_stages", "pipeline_stage_choices", "loop_iteration_us", "programs_per_sm", "min_dot",        "max_tile_elements", "measurements"};
  for (const auto& [key, value] : root.object)
    if (!known.count(key))
      throw Error(file, value.loc, "unknown field \"" + key + "\" in a target profile");

  Target t;
  t.name = text(root, "name", file);
  t.description = text(root, "description", file);
  t.sms = int(number(root, "sms", file, 1, true));
  t.dram_bytes_per_s = number(root, "dram_GBps", file, 1e-3, false) * 1e9;
  t.kernel_bytes_per_s = root.find("kernel_GBps")
                             ? number(root, "kernel_GBps", file, 1e-3, false) * 1e9
                             : t.dram_bytes_per_s;
  t.sm_bytes_per_s = number(root, "sm_GBps", file, 1e-3, false) * 1e9;
  t.stream_half_bytes =
      root.find("stream_half_MiB") ? number(root, "stream_half_MiB", file, 0, false) * 1024 * 1024 : 0;
  t.mma_flops_per_s = number(root, "mma_TFLOPs", file, 1e-3, false) * 1e12;
  t.fp_flops_per_s = number(root, "fp32_TFLOPs", file, 1e-3, false) * 1e12;
  t.launch_s = number(root, "launch_us", file, 0, false) * 1e-6;
  t.l2_bytes = int64_t(number(root, "l2_MiB", file, 0, false) * 1024 * 1024);
  t.l2_reuse_bytes = double(t.l2_bytes) / 4;
  t.l2_bytes_per_s =
      root.find("l2_GBps") ? number(root, "l2_GBps", file, 1e-3, false) * 1e9 : t.kernel_bytes_per_s;
  t.smem_bytes_per_program = int64_t(number(root, "smem_per_program_KiB", file, 1, false) * 1024);
  t.register_bytes_per_program = int64_t(number(root, "registers_per_program_KiB", file, 1, false) * 1024);
  t.pipeline_stages = int(number(root, "pipeline_stages", file, 1, true));
  // Optional: the stages a launch may use, of which the estimate of a ranked
  // candidate takes the best (CostModel::best_stages); default just
  // pipeline_stages.
  t.stage_choices = {t.pipeline_stages};
  if (const json::Value* v = root.find("pipeline_stage_choices")) {
    if (v->kind != json::Value::Kind::Array || v->array.empty())
      throw Error(file, v->loc, "\"pipeline_stage_choices\" must be a non-empty array of stage counts");
    t.stage_choices.clear();
    for (const json::Value& s : v->array) {
      if (s.kind != json::Value::Kind::Number || s.number < 1 || s.number > 16 || s.number != std::floor(s.number))
        throw Error(file, s.loc, "\"pipeline_stage_choices\" holds whole numbers from 1 to 16");
      t.stage_choices.push_back(int(s.number));
    }
  }
  // Optional: a profile without them has no latency term.
  t.loop_iteration_s = root.find("loop_iteration_us") ? number(root, "loop_iteration_us", file, 0, false) * 1e-6 : 0;
  t.programs_per_sm = root.find("programs_per_sm") ? number(root, "programs_per_sm", file, 1, false) : 1;
  t.min_dot = int(number(root, "min_dot", file, 1, true));
  t.max_tile_elements = int64_t(number(root, "max_tile_elements", file, 1, true));
  return t;
}

std::vector<std::string> target_search_path() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EQIFORGE_DATA"); env && *env) dirs.push_back(std::string(env) + "/targets");
  std::error_code ec;
  fs::path here = fs::current_path(ec);
  for (int up = 0; !ec && up <= 3; ++up) {
    dirs.push_back((here / "data" / "targets").string());
    if (!here.has_parent_path() || here.parent_path() == here) break;
    here = here.parent_path();
  }
  std::string exe = exe_dir();
  if (!exe.empty()) {
    fs::path e(exe);
    dirs.push_back((e / "data" / "targets").string());
    dirs.push_back((e.parent_path() / "data" / "targets").string());
    dirs.push_back((e.parent_path().parent_path() / "data" / "targets").string());
    // Where `pip install .` puts the profiles: <prefix>/share/eqiforge/targets
    // beside <prefix>/bin/eqiforge-opt.
    dirs.push_back((e.parent_path() / "share" / "eqiforge" / "targets").string());
  }
  return dirs;
}

Target load_target(std::string_view name_or_path) {
  std::string arg(name_or_path);
  std::vector<std::string> tried;
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  if (arg.find('/') != std::string::npos || arg.ends_with(".json")) {
    std::error_code ec;
    if (!fs::is_regular_file(arg, ec)) throw Error("target profile " + arg + " does not exist");
    return parse_target(read(arg), arg);
  }
  for (const std::string& dir : target_search_path()) {
    std::string path = dir + "/" + arg + ".json";
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return parse_target(read(path), path);
    tried.push_back(dir);
  }
  std::string where;
  for (const std::string& d : tried) where += "\n  " + d;
  throw Error("unknown target '" + arg + "': no " + arg + ".json in" + where +
              "\n(set EQIFORGE_DATA to the folder that holds targets/, or give a path to a profile)");
}

}  // namespace eqf
