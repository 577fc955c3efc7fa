// Hardware profiles for the cost model (DESIGN §6), read from data files
// (data/targets/NAME.json) so that figures are measured or sourced, never
// buried in code.
//
// A profile holds what the optimistic latency bound needs:
//   - the device's copy bandwidth, and what one program (one SM) can stream
//     alone: a grid with fewer programs than that ratio cannot use all of it;
//   - the dense fp16/bf16 tensor-core peak and the fp32 peak outside them;
//   - the launch overhead of one kernel;
//   - the per-program budgets that decide which block sizes are legal: shared
//     memory for loaded tiles (times the pipeline's stages), registers for
//     accumulators and live tiles, and the most elements one tile may hold.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace eqf {

struct Target {
  std::string name;                  // "h200"
  std::string description;           // the device, and where the figures come from
  int sms = 0;                       // streaming multiprocessors
  double dram_bytes_per_s = 0;       // copy bandwidth, bytes read plus bytes written
  // What a generated kernel streams at best, with every SM busy (tiled
  // loads, not a copy engine's): the cap of the cost model's bandwidth.
  // Defaults to dram_bytes_per_s when a profile does not measure it.
  double kernel_bytes_per_s = 0;
  double sm_bytes_per_s = 0;         // bandwidth one program of a generated kernel reaches
  // A loop streams at kernel_bytes_per_s * F / (F + stream_half_bytes), F
  // the bytes its resident programs keep in flight (Little's law: requests
  // in flight over DRAM latency): a loop of small tiles, shallow pipelining
  // or few programs cannot use all of the bandwidth. 0: no such limit.
  double stream_half_bytes = 0;
  double mma_flops_per_s = 0;        // dense fp16/bf16 tensor-core peak (fp32 accumulate)
  double fp_flops_per_s = 0;         // fp32 peak outside the tensor cores
  double launch_s = 0;               // one kernel launch (an empty kernel's time)
  int64_t l2_bytes = 0;
  // Re-reads of a slice of at most l2_reuse_bytes are served from L2, which
  // delivers l2_bytes_per_s in all (defaults: a quarter of the L2, and no
  // faster than the kernel bandwidth, i.e. no reuse benefit).
  double l2_reuse_bytes = 0;
  double l2_bytes_per_s = 0;
  int64_t smem_bytes_per_program = 0;      // shared memory one program may use
  int64_t register_bytes_per_program = 0;  // register budget for tiles of one program
  int pipeline_stages = 2;           // copies of each loop-carried load tile in shared memory
  // The stage counts a launch may use; ranked candidates are estimated at
  // the best of them (always holds pipeline_stages).
  std::vector<int> stage_choices{2};
  double loop_iteration_s = 0;       // the least time one loop iteration of a program takes
  double programs_per_sm = 1;        // programs resident on one SM at once (they overlap their loops)
  int min_dot = 16;                  // tl.dot's smallest M, N and K (smaller tiles are padded)
  // A dot on fewer rows than a warp-group MMA takes (Hopper's wgmma: 64)
  // runs as mma.sync, which reads both operand tiles from registers.
  int warp_group_rows = 64;
  int64_t max_tile_elements = 1 << 20;  // Triton's limit on the elements of one tile
};

// Parses a profile (JSON; see data/targets/h200.json for the fields). Throws
// eqf::Error naming the file, the field and what was expected.
Target parse_target(std::string_view json, const std::string& file);

// A profile by name ("h200": NAME.json in the first directory of
// target_search_path() that has it) or by path (anything with a '/' or
// ending in .json). Throws eqf::Error listing where it looked.
Target load_target(std::string_view name_or_path);

// Where profiles are looked up, in order: $EQIFORGE_DATA/targets, then
// data/targets under the current directory and its parents (up to three
// levels), then data/targets beside or above the running executable.
std::vector<std::string> target_search_path();

}  // namespace eqf
