// Microbenchmarks behind the measured figures of data/targets/*.json:
//   - launch: GPU time per empty kernel launched back to back, and the
//     latency of one launch followed by a synchronize;
//   - bandwidth against the number of programs (CTAs): a copy kernel whose
//     CTAs each stream their own contiguous chunk, as a Triton program with
//     a few warps streams its block, for 1 .. 8x SMs CTAs (bytes read and
//     written both counted);
//   - FP32 FMA throughput outside the tensor cores.
// Build and run on the target machine:  nvcc -O3 -o measure measure.cu && ./measure
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

__global__ void empty_kernel() {}

// Each CTA copies [begin, end) of its own chunk; U independent 16-byte loads
// per thread per step set the bytes in flight (a Triton program loading a
// tile issues the whole tile's loads at once, and pipelines the next).
template <int U>
__global__ void copy_chunks(const float4* __restrict__ in, float4* __restrict__ out, size_t per_cta) {
  size_t begin = size_t(blockIdx.x) * per_cta;
  size_t end = begin + per_cta;
  for (size_t i = begin + threadIdx.x; i < end; i += U * blockDim.x) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      size_t j = i + size_t(u) * blockDim.x;
      if (j < end) v[u] = in[j];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      size_t j = i + size_t(u) * blockDim.x;
      if (j < end) out[j] = v[u];
    }
  }
}

__global__ void fma_kernel(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c0 = 0.5f, c1 = 0.25f, c2 = 0.125f, c3 = 0.0625f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
      c0 = fmaf(c0, b, a);
      c1 = fmaf(c1, b, a);
      c2 = fmaf(c2, b, a);
      c3 = fmaf(c3, b, a);
    }
  }
  if (c0 + c1 + c2 + c3 == 12345.f) out[threadIdx.x] = c0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s sms %d l2 %d smem_per_block_optin %zu regs_per_block %d\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize, prop.sharedMemPerBlockOptin, prop.regsPerBlock);
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  float ms = 0;

  // Launch overhead.
  for (int i = 0; i < 100; ++i) empty_kernel<<<1, 32>>>();
  CHECK(cudaDeviceSynchronize());
  const int launches = 2000;
  CHECK(cudaEventRecord(e0));
  for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32>>>();
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  std::printf("launch_back_to_back_us %.3f\n", 1000.0 * ms / launches);
  double lat = 0;
  for (int i = 0; i < 200; ++i) {
    CHECK(cudaEventRecord(e0));
    empty_kernel<<<1, 32>>>();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    lat += ms;
  }
  std::printf("launch_single_event_us %.3f\n", 1000.0 * lat / 200);

  // Bandwidth against the number of CTAs: 1 GiB copied in total (well past
  // the L2), split evenly among the CTAs.
  const size_t bytes = size_t(1) << 30;
  const size_t n4 = bytes / sizeof(float4);
  float4 *in = nullptr, *out = nullptr;
  CHECK(cudaMalloc(&in, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMemset(in, 0, bytes));
  std::vector<int> ctas = {1, 2, 4, 8, 16, 33, 66, 99, 132, 264, 528, 1056};
  auto run_copy = [&](auto kernel, int unroll, int threads) -> int {
    for (int g : ctas) {
      size_t per = n4 / size_t(g);
      // Few CTAs move less data so the run stays short; still far past L2.
      size_t use_per = g < 16 ? per / size_t(16 / g) : per;
      kernel<<<g, threads>>>(in, out, use_per);
      CHECK(cudaDeviceSynchronize());
      const int reps = 5;
      CHECK(cudaEventRecord(e0));
      for (int r = 0; r < reps; ++r) kernel<<<g, threads>>>(in, out, use_per);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      double moved = 2.0 * double(use_per) * g * sizeof(float4) * reps;
      std::printf("copy unroll %d threads %d ctas %d GBps %.1f per_cta_GBps %.2f\n", unroll, threads, g,
                  moved / (ms * 1e6), moved / (ms * 1e6) / g);
    }
    return 0;
  };
  if (run_copy(copy_chunks<4>, 4, 128)) return 1;
  if (run_copy(copy_chunks<4>, 4, 256)) return 1;
  if (run_copy(copy_chunks<8>, 8, 256)) return 1;
  if (run_copy(copy_chunks<16>, 16, 256)) return 1;
  if (run_copy(copy_chunks<8>, 8, 1024)) return 1;

  // FP32 FMA throughput: 8 CTAs per SM of 256 threads.
  float* sink = nullptr;
  CHECK(cudaMalloc(&sink, 1024 * sizeof(float)));
  int grid = prop.multiProcessorCount * 8, iters = 4096;
  fma_kernel<<<grid, 256>>>(sink, 16);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(e0));
  fma_kernel<<<grid, 256>>>(sink, iters);
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  double flops = 2.0 * 64.0 * double(iters) * grid * 256;
  std::printf("fp32_fma_TFLOPs %.1f\n", flops / (ms * 1e9));
  return 0;
}
