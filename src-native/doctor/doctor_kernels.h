// The doctor's Metal kernels, written once as MSL source and compiled at run time with
// newLibraryWithSource:options:completionHandler:. Each entry names the function the runner asks for and the language
// version it needs. test/native/doctor-kernels.test.ts extracts every R"MSL(...)MSL" block and compiles it as C++
// against test/msl/metal_stdlib (a declaration-only subset), so a typo fails on Linux; only a Mac compiles them as MSL.
#pragma once

namespace mcs {

struct DoctorKernel {
  const char *function;
  unsigned long languageVersion;  // MTLLanguageVersion: (major << 16) | minor
  const char *source;
};

// Whether two entries can be built from one compiled library (buildPipelines): the same source and language version.
constexpr bool sharesSource(const DoctorKernel &a, const DoctorKernel &b) {
  return a.source == b.source && a.languageVersion == b.languageVersion;
}

// MSL 2.3 is the first with SIMD-group matrices on macOS; the probes that do not need it use it too, so one
// version covers every capability probe but bfloat.
inline constexpr unsigned long kMsl2_3 = 0x20003;
// bfloat arrived with MSL 3.1 (macOS 14). The macOS 12 SDK has no enumerator for it, hence the number.
inline constexpr unsigned long kMsl3_1 = 0x30001;

inline constexpr DoctorKernel kSimdReduceKernel = {"mcs_doctor_simd_reduce", kMsl2_3, R"MSL(
#include <metal_stdlib>
using namespace metal;

// Every thread writes its SIMD-group's sum and maximum; the host groups threads by the reported SIMD width.
kernel void mcs_doctor_simd_reduce(device const float *input [[buffer(0)]],
                                   device float *sums [[buffer(1)]],
                                   device float *maxima [[buffer(2)]],
                                   device uint *width [[buffer(3)]],
                                   uint gid [[thread_position_in_grid]],
                                   uint simdWidth [[threads_per_simdgroup]]) {
  float value = input[gid];
  sums[gid] = simd_sum(value);
  maxima[gid] = simd_max(value);
  if (gid == 0) {
    width[0] = simdWidth;
  }
}
)MSL"};

// One SIMD-group (one threadgroup of 32 threads) per 8x8 tile of C = A x B; n x n row-major, n a multiple of 8. One
// template, instantiated for float and half under the names the runner asks for ([[host_name]]), so both element
// types run the same code.
inline constexpr char kMatmulSource[] = R"MSL(
#include <metal_stdlib>
#include <metal_simdgroup_matrix>
using namespace metal;

template <typename T>
kernel void mcs_doctor_matmul(device const T *a [[buffer(0)]],
                              device const T *b [[buffer(1)]],
                              device T *c [[buffer(2)]],
                              constant uint &n [[buffer(3)]],
                              uint2 tile [[threadgroup_position_in_grid]]) {
  simdgroup_matrix<T, 8, 8> acc = make_filled_simdgroup_matrix<T, 8>(T(0.0f));
  for (uint k = 0; k < n; k += 8) {
    simdgroup_matrix<T, 8, 8> ma;
    simdgroup_matrix<T, 8, 8> mb;
    simdgroup_load(ma, a + tile.y * 8 * n + k, n);
    simdgroup_load(mb, b + k * n + tile.x * 8, n);
    simdgroup_multiply_accumulate(acc, ma, mb, acc);
  }
  simdgroup_store(acc, c + tile.y * 8 * n + tile.x * 8, n);
}

typedef decltype(mcs_doctor_matmul<float>) matmul_f32_t;
typedef decltype(mcs_doctor_matmul<half>) matmul_f16_t;
template [[host_name("mcs_doctor_matmul_f32")]] kernel matmul_f32_t mcs_doctor_matmul<float>;
template [[host_name("mcs_doctor_matmul_f16")]] kernel matmul_f16_t mcs_doctor_matmul<half>;
)MSL";

inline constexpr DoctorKernel kMatmulFloatKernel = {"mcs_doctor_matmul_f32", kMsl2_3, kMatmulSource};
inline constexpr DoctorKernel kMatmulHalfKernel = {"mcs_doctor_matmul_f16", kMsl2_3, kMatmulSource};
// The runner builds both from one compile of the source (buildPipelines).
static_assert(sharesSource(kMatmulFloatKernel, kMatmulHalfKernel), "the matmul kernels are one library");

// Results go through bfloat variables so the compiler must round each one (no excess float precision).
inline constexpr DoctorKernel kBfloatKernel = {"mcs_doctor_bfloat", kMsl3_1, R"MSL(
#include <metal_stdlib>
using namespace metal;

kernel void mcs_doctor_bfloat(device const float *x [[buffer(0)]],
                              device const float *y [[buffer(1)]],
                              device float *converted [[buffer(2)]],
                              device float *sums [[buffer(3)]],
                              device float *products [[buffer(4)]],
                              uint gid [[thread_position_in_grid]]) {
  bfloat bx = bfloat(x[gid]);
  bfloat by = bfloat(y[gid]);
  bfloat sum = bx + by;
  bfloat product = bx * by;
  converted[gid] = float(bx);
  sums[gid] = float(sum);
  products[gid] = float(product);
}
)MSL"};

// Every threadgroup fills its whole allocation with a pattern of its own (seeded by its position in the grid), then
// reads all of it back, in two rounds; report[2g] counts the words threadgroup g checked (2 x words when it ran),
// report[2g + 1] those that were not what it wrote. Threadgroups that share memory overwrite each other's patterns.
inline constexpr DoctorKernel kThreadgroupKernel = {"mcs_doctor_threadgroup", kMsl2_3, R"MSL(
#include <metal_stdlib>
using namespace metal;

kernel void mcs_doctor_threadgroup(device atomic_uint *report [[buffer(0)]],
                                   constant uint &words [[buffer(1)]],
                                   threadgroup uint *scratch [[threadgroup(0)]],
                                   uint tid [[thread_index_in_threadgroup]],
                                   uint threads [[threads_per_threadgroup]],
                                   uint group [[threadgroup_position_in_grid]]) {
  uint checked = 0;
  uint wrong = 0;
  for (uint round = 0; round < 2; round++) {
    uint seed = group * 2246822519u + round * 3266489917u + 374761393u;
    for (uint i = tid; i < words; i += threads) {
      scratch[i] = (i * 2654435761u) ^ seed;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = tid; i < words; i += threads) {
      uint j = words - 1 - i;
      checked += 1;
      wrong += scratch[j] != ((j * 2654435761u) ^ seed) ? 1u : 0u;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  atomic_fetch_add_explicit(&report[2 * group], checked, memory_order_relaxed);
  atomic_fetch_add_explicit(&report[2 * group + 1], wrong, memory_order_relaxed);
}
)MSL"};

// FNV-1a over 32-bit words of each sampled block of the NoCopy buffer.
inline constexpr DoctorKernel kBlockChecksumKernel = {"mcs_doctor_block_checksum", kMsl2_3, R"MSL(
#include <metal_stdlib>
using namespace metal;

kernel void mcs_doctor_block_checksum(device const uint *data [[buffer(0)]],
                                      device const ulong *firstWord [[buffer(1)]],
                                      device uint *sums [[buffer(2)]],
                                      constant uint &wordsPerBlock [[buffer(3)]],
                                      constant uint &blocks [[buffer(4)]],
                                      uint gid [[thread_position_in_grid]]) {
  if (gid >= blocks) {
    return;
  }
  device const uint *block = data + firstWord[gid];
  uint hash = 2166136261u;
  for (uint i = 0; i < wordsPerBlock; i++) {
    hash = (hash ^ block[i]) * 16777619u;
  }
  sums[gid] = hash;
}
)MSL"};

// Reads the buffer that was made resident through the residency set.
inline constexpr DoctorKernel kResidentReadKernel = {"mcs_doctor_resident_read", kMsl2_3, R"MSL(
#include <metal_stdlib>
using namespace metal;

kernel void mcs_doctor_resident_read(device const uint *input [[buffer(0)]],
                                     device uint *output [[buffer(1)]],
                                     uint gid [[thread_position_in_grid]]) {
  output[gid] = input[gid] ^ 2779096485u;
}
)MSL"};

// The heap probe's two kernels, one source: the first writes a pattern into a buffer placed in an MTLHeap, a second
// dispatch reads it back.
inline constexpr char kHeapSource[] = R"MSL(
#include <metal_stdlib>
using namespace metal;

kernel void mcs_doctor_heap_write(device const uint *seed [[buffer(0)]],
                                  device uint *placed [[buffer(1)]],
                                  uint gid [[thread_position_in_grid]]) {
  placed[gid] = seed[gid] * 2654435761u + 40503u;
}

kernel void mcs_doctor_heap_read(device const uint *placed [[buffer(0)]],
                                 device uint *output [[buffer(1)]],
                                 uint gid [[thread_position_in_grid]]) {
  output[gid] = placed[gid] ^ 2654435769u;
}
)MSL";

inline constexpr DoctorKernel kHeapWriteKernel = {"mcs_doctor_heap_write", kMsl2_3, kHeapSource};
inline constexpr DoctorKernel kHeapReadKernel = {"mcs_doctor_heap_read", kMsl2_3, kHeapSource};
static_assert(sharesSource(kHeapWriteKernel, kHeapReadKernel), "the heap kernels are one library");

}  // namespace mcs
