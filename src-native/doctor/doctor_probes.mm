#include "doctor_probes.h"

#include <objc/runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mcs {

// ---- CPU references ----

uint16_t floatToBfloatBits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float bfloatBitsToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t floatToHalfBits(float value) {
  uint32_t f;
  memcpy(&f, &value, sizeof(f));
  uint32_t sign = (f >> 16) & 0x8000u;
  int32_t exponent = static_cast<int32_t>((f >> 23) & 0xffu);
  uint32_t mantissa = f & 0x7fffffu;
  if (exponent == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mantissa != 0 ? 0x200u : 0u));
  int32_t e = exponent - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    uint32_t full = mantissa | 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = full >> shift;
    uint32_t rest = full & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u) != 0)) half++;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) half++;
  return static_cast<uint16_t>(sign | half);
}

float halfBitsToFloat(uint16_t bits) {
  uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -v : v;
  }
  uint32_t f = exponent == 31 ? (sign | 0x7f800000u | (mantissa << 13))
                              : (sign | ((exponent - 15u + 127u) << 23) | (mantissa << 13));
  float value;
  memcpy(&value, &f, sizeof(value));
  return value;
}

namespace {

// Deterministic inputs (the same on every run, so a failure reproduces).
class Lcg {
 public:
  explicit Lcg(uint32_t seed) : state_(seed) {}
  uint32_t next() {
    state_ = state_ * 1664525u + 1013904223u;
    return state_;
  }

 private:
  uint32_t state_;
};

template <typename T>
const T *contentsOf(id<MTLBuffer> buffer) {
  return static_cast<const T *>([buffer contents]);
}

std::string floatText(double v) {
  char text[48];
  snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

// Calls a macOS 15 selector the macOS 12 SDK does not declare, through its implementation (no objc_msgSend, which
// GCC's runtime lacks). False when the object does not respond to it.
bool callVoid(id object, const char *name) {
  SEL sel = sel_registerName(name);
  if (![object respondsToSelector:sel]) return false;
  using Fn = void (*)(id, SEL);
  reinterpret_cast<Fn>(class_getMethodImplementation(object_getClass(object), sel))(object, sel);
  return true;
}

bool callWithObject(id object, const char *name, id argument) {
  SEL sel = sel_registerName(name);
  if (![object respondsToSelector:sel]) return false;
  using Fn = void (*)(id, SEL, id);
  reinterpret_cast<Fn>(class_getMethodImplementation(object_getClass(object), sel))(object, sel, argument);
  return true;
}

}  // namespace

// ---- simdgroup-reduction ----

ProbeOutcome runSimdgroupReduction(ProbeContext &ctx) {
  const DoctorProbe probe = DoctorProbe::SimdgroupReduction;
  constexpr uint32_t kThreads = 256;
  constexpr uint32_t kGroup = 64;
  Pipeline pipeline;
  if (!buildPipeline(ctx, kSimdReduceKernel, &pipeline)) return unbuilt(probe, pipeline);
  if (maxThreads(pipeline.state.get()) < kGroup) return tooFewThreads(probe, pipeline.state.get(), kGroup);
  // Small integers: every partial sum is exact in float, whatever order the hardware adds in.
  std::vector<float> input(kThreads);
  for (uint32_t i = 0; i < kThreads; i++) input[i] = static_cast<float>(static_cast<int>((i * 37u) % 101u) - 50);
  Owned<id<MTLBuffer>> in(newSharedBuffer(ctx.device, input.data(), input.size() * sizeof(float)));
  Owned<id<MTLBuffer>> sums(newSharedBuffer(ctx.device, nullptr, kThreads * sizeof(float)));
  Owned<id<MTLBuffer>> maxima(newSharedBuffer(ctx.device, nullptr, kThreads * sizeof(float)));
  Owned<id<MTLBuffer>> width(newSharedBuffer(ctx.device, nullptr, sizeof(uint32_t)));
  Owned<id<MTLCommandQueue>> queue([ctx.device newCommandQueue]);
  if (!in || !sums || !maxima || !width || !queue)
    return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no buffer or queue");
  DispatchSpec spec;
  spec.pipeline = pipeline.state.get();
  spec.buffers = {in.get(), sums.get(), maxima.get(), width.get()};
  spec.threadgroups = MTLSizeMake(kThreads / kGroup, 1, 1);
  spec.threadsPerThreadgroup = MTLSizeMake(kGroup, 1, 1);
  GpuFailure error;
  Completion done = dispatch(queue.get(), spec, ctx.deadline, &error);
  if (done != Completion::Completed) return incomplete(probe, done, error, ctx.deadline, "the reduction dispatch");
  uint32_t w = contentsOf<uint32_t>(width.get())[0];
  if (w == 0 || kGroup % w != 0) {
    return makeOutcome(probe, DoctorStatus::WrongResult,
                       "the kernel reported a SIMD-group width of " + std::to_string(w) + " threads");
  }
  const float *gotSums = contentsOf<float>(sums.get());
  const float *gotMax = contentsOf<float>(maxima.get());
  uint32_t wrong = 0;
  std::string first;
  for (uint32_t gid = 0; gid < kThreads; gid++) {
    uint32_t begin = gid / kGroup * kGroup + (gid % kGroup) / w * w;
    float sum = 0, max = input[begin];
    for (uint32_t i = begin; i < begin + w; i++) {
      sum += input[i];
      max = std::max(max, input[i]);
    }
    if (gotSums[gid] != sum || gotMax[gid] != max) {
      if (wrong++ == 0) {
        first = "thread " + std::to_string(gid) + ": simd_sum " + floatText(gotSums[gid]) + " (CPU " + floatText(sum) +
                "), simd_max " + floatText(gotMax[gid]) + " (CPU " + floatText(max) + ")";
      }
    }
  }
  if (wrong > 0) {
    return makeOutcome(
        probe, DoctorStatus::WrongResult,
        std::to_string(wrong) + " of " + std::to_string(kThreads) + " threads differ from the CPU; " + first);
  }
  return makeOutcome(probe, DoctorStatus::Pass,
                     "simd_sum and simd_max over " + std::to_string(kThreads) + " threads in SIMD-groups of " +
                         std::to_string(w) + " equal the CPU's");
}

// ---- simdgroup-matrix ----

namespace {

struct MatrixRun {
  const char *name;
  bool half;
  uint32_t n;
  double tolerance;
};

// Quarter and half steps: every product and partial sum is exact in half and float, so any deviation is the
// hardware's, not rounding.
float matrixA(uint32_t i) {
  return static_cast<float>(static_cast<int>((i * 7u + 3u) % 9u) - 4) * 0.25f;
}
float matrixB(uint32_t i) {
  return static_cast<float>(static_cast<int>((i * 5u + 1u) % 7u) - 3) * 0.5f;
}

}  // namespace

ProbeOutcome runSimdgroupMatrix(ProbeContext &ctx) {
  const DoctorProbe probe = DoctorProbe::SimdgroupMatrix;
  constexpr NSUInteger kSimdgroup = 32;
  Pipeline floatPipeline, halfPipeline;
  if (const Pipeline *failed =
          buildPipelines(ctx, {{kMatmulFloatKernel, &floatPipeline}, {kMatmulHalfKernel, &halfPipeline}}))
    return unbuilt(probe, *failed);
  for (Pipeline *p : {&floatPipeline, &halfPipeline}) {
    // The kernels give each 8x8 tile one threadgroup of one SIMD-group of 32 threads, the width of Apple GPUs; a
    // device whose SIMD-groups are another width (AMD's 64, Intel's 8 to 32) would run them differently.
    NSUInteger width = [p->state.get() threadExecutionWidth];
    if (width != kSimdgroup) {
      return makeOutcome(probe, DoctorStatus::Unsupported,
                         "the pipeline's SIMD-group width (threadExecutionWidth) is " +
                             std::to_string((unsigned long)width) + " threads; the probe's kernels need " +
                             std::to_string((unsigned long)kSimdgroup));
    }
    if (maxThreads(p->state.get()) < kSimdgroup) return tooFewThreads(probe, p->state.get(), kSimdgroup);
  }
  Owned<id<MTLCommandQueue>> queue([ctx.device newCommandQueue]);
  if (!queue) return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no command queue");
  const MatrixRun runs[] = {{"8x8 float", false, 8, 1e-4},
                            {"32x32 float", false, 32, 1e-4},
                            {"8x8 half", true, 8, 1e-2},
                            {"32x32 half", true, 32, 1e-2}};
  double worst = 0;
  bool measured = false;
  std::string failures;
  for (const MatrixRun &run : runs) {
    uint32_t n = run.n, count = n * n;
    size_t element = run.half ? sizeof(uint16_t) : sizeof(float);
    std::vector<float> a(count), b(count);
    std::vector<double> expected(count, 0.0);
    for (uint32_t i = 0; i < count; i++) {
      a[i] = matrixA(i);
      b[i] = matrixB(i);
    }
    for (uint32_t r = 0; r < n; r++) {
      for (uint32_t c = 0; c < n; c++) {
        for (uint32_t k = 0; k < n; k++) expected[r * n + c] += static_cast<double>(a[r * n + k]) * b[k * n + c];
      }
    }
    std::vector<uint16_t> ah(count), bh(count);
    for (uint32_t i = 0; i < count; i++) {
      ah[i] = floatToHalfBits(a[i]);
      bh[i] = floatToHalfBits(b[i]);
    }
    Owned<id<MTLBuffer>> bufA(
        newSharedBuffer(ctx.device, run.half ? (const void *)ah.data() : a.data(), count * element));
    Owned<id<MTLBuffer>> bufB(
        newSharedBuffer(ctx.device, run.half ? (const void *)bh.data() : b.data(), count * element));
    Owned<id<MTLBuffer>> bufC(newSharedBuffer(ctx.device, nullptr, count * element));
    Owned<id<MTLBuffer>> bufN(newSharedBuffer(ctx.device, &n, sizeof(n)));
    if (!bufA || !bufB || !bufC || !bufN) return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no buffer");
    DispatchSpec spec;
    spec.pipeline = (run.half ? halfPipeline : floatPipeline).state.get();
    spec.buffers = {bufA.get(), bufB.get(), bufC.get(), bufN.get()};
    spec.threadgroups = MTLSizeMake(n / 8, n / 8, 1);
    spec.threadsPerThreadgroup = MTLSizeMake(kSimdgroup, 1, 1);
    GpuFailure error;
    Completion done = dispatch(queue.get(), spec, ctx.deadline, &error);
    if (done != Completion::Completed) {
      ProbeOutcome o = incomplete(probe, done, error, ctx.deadline, std::string("the ") + run.name + " product");
      if (measured) o.maxAbsError = worst;
      return o;
    }
    measured = true;
    double runWorst = 0;
    for (uint32_t i = 0; i < count; i++) {
      double got = run.half ? halfBitsToFloat(contentsOf<uint16_t>(bufC.get())[i]) : contentsOf<float>(bufC.get())[i];
      double deviation = std::isfinite(got) ? std::fabs(got - expected[i]) : INFINITY;
      runWorst = std::max(runWorst, deviation);
    }
    worst = std::max(worst, runWorst);
    if (runWorst > run.tolerance) {
      failures += (failures.empty() ? "" : "; ") + std::string(run.name) + " max |error| " + floatText(runWorst) +
                  " > " + floatText(run.tolerance);
    }
  }
  if (!failures.empty()) {
    ProbeOutcome o = makeOutcome(probe, DoctorStatus::WrongResult,
                                 "simdgroup_multiply_accumulate differs from the CPU: " + failures);
    o.maxAbsError = worst;
    return o;
  }
  ProbeOutcome o = makeOutcome(probe, DoctorStatus::Pass,
                               "8x8 and 32x32 products of simdgroup_float8x8 and simdgroup_half8x8 equal the CPU's "
                               "within tolerance (max |error| " +
                                   floatText(worst) + ")");
  o.maxAbsError = worst;
  return o;
}

// ---- bfloat ----

namespace {

// A float with the given exponent (unbiased) and random sign and mantissa; `low` forces the 16 bits below the
// bfloat mantissa (a tie is 0x8000).
float shapedFloat(Lcg &rng, int exponent, int low) {
  uint32_t r = rng.next();
  uint32_t bits = (r & 0x80000000u) | (static_cast<uint32_t>(exponent + 127) << 23) | (rng.next() & 0x7fffffu);
  if (low >= 0) bits = (bits & 0xffff0000u) | static_cast<uint32_t>(low);
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

ProbeOutcome runBfloat(ProbeContext &ctx) {
  const DoctorProbe probe = DoctorProbe::Bfloat;
  if (ctx.osMajor != 0 && ctx.osMajor < 14) {
    return makeOutcome(
        probe, DoctorStatus::Unsupported,
        "bfloat needs MSL 3.1, which macOS " + std::to_string(ctx.osMajor) + " does not have (macOS 14+)");
  }
  constexpr uint32_t kCount = 256;
  constexpr NSUInteger kGroup = 64;
  Pipeline pipeline;
  if (!buildPipeline(ctx, kBfloatKernel, &pipeline)) return unbuilt(probe, pipeline);
  if (maxThreads(pipeline.state.get()) < kGroup) return tooFewThreads(probe, pipeline.state.get(), kGroup);
  // Exponents within [-4, 4]: the exact sum and product of two bfloats fit a float, so the reference rounds once,
  // as the GPU must. Every fourth x is a tie rounding down to even, every fourth + 1 a tie rounding up to even.
  Lcg rng(0x6b667431u);
  std::vector<float> x(kCount), y(kCount);
  for (uint32_t i = 0; i < kCount; i++) {
    int exponent = static_cast<int>(rng.next() % 9u) - 4;
    int low = i % 4 == 0 ? 0x8000 : -1;
    x[i] = shapedFloat(rng, exponent, low);
    if (i % 4 == 1) {
      uint32_t bits;
      memcpy(&bits, &x[i], sizeof(bits));
      bits = (bits & 0xffff0000u) | 0x00018000u;
      memcpy(&x[i], &bits, sizeof(bits));
    }
    y[i] = shapedFloat(rng, static_cast<int>(rng.next() % 9u) - 4, -1);
  }
  size_t bytes = kCount * sizeof(float);
  Owned<id<MTLBuffer>> bufX(newSharedBuffer(ctx.device, x.data(), bytes));
  Owned<id<MTLBuffer>> bufY(newSharedBuffer(ctx.device, y.data(), bytes));
  Owned<id<MTLBuffer>> converted(newSharedBuffer(ctx.device, nullptr, bytes));
  Owned<id<MTLBuffer>> sums(newSharedBuffer(ctx.device, nullptr, bytes));
  Owned<id<MTLBuffer>> products(newSharedBuffer(ctx.device, nullptr, bytes));
  Owned<id<MTLCommandQueue>> queue([ctx.device newCommandQueue]);
  if (!bufX || !bufY || !converted || !sums || !products || !queue) {
    return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no buffer or queue");
  }
  DispatchSpec spec;
  spec.pipeline = pipeline.state.get();
  spec.buffers = {bufX.get(), bufY.get(), converted.get(), sums.get(), products.get()};
  spec.threadgroups = MTLSizeMake(kCount / kGroup, 1, 1);
  spec.threadsPerThreadgroup = MTLSizeMake(kGroup, 1, 1);
  GpuFailure error;
  Completion done = dispatch(queue.get(), spec, ctx.deadline, &error);
  if (done != Completion::Completed) return incomplete(probe, done, error, ctx.deadline, "the bfloat dispatch");
  double worst = 0;
  uint32_t wrong = 0;
  std::string first;
  const char *names[] = {"bfloat(x)", "x + y", "x * y"};
  const float *got[] = {contentsOf<float>(converted.get()), contentsOf<float>(sums.get()),
                        contentsOf<float>(products.get())};
  for (uint32_t i = 0; i < kCount; i++) {
    float bx = bfloatBitsToFloat(floatToBfloatBits(x[i]));
    float by = bfloatBitsToFloat(floatToBfloatBits(y[i]));
    float expected[] = {bx, bfloatBitsToFloat(floatToBfloatBits(bx + by)),
                        bfloatBitsToFloat(floatToBfloatBits(bx * by))};
    for (int k = 0; k < 3; k++) {
      double deviation = std::isfinite(got[k][i]) ? std::fabs(static_cast<double>(got[k][i]) - expected[k]) : INFINITY;
      worst = std::max(worst, deviation);
      if (memcmp(&got[k][i], &expected[k], sizeof(float)) != 0 && wrong++ == 0) {
        first = std::string(names[k]) + " for x = " + floatText(x[i]) + ", y = " + floatText(y[i]) + " gave " +
                floatText(got[k][i]) + ", round-to-nearest-even gives " + floatText(expected[k]);
      }
    }
  }
  ProbeOutcome o;
  if (wrong > 0) {
    o = makeOutcome(probe, DoctorStatus::WrongResult,
                    std::to_string(wrong) + " of " + std::to_string(3 * kCount) + " bfloat results differ; " + first);
  } else {
    o = makeOutcome(probe, DoctorStatus::Pass,
                    "bfloat conversion, addition and multiplication of " + std::to_string(kCount) +
                        " values round to nearest even, as the CPU's reference does");
  }
  o.maxAbsError = worst;
  return o;
}

// ---- threadgroup-memory ----

namespace {

// Metal's validation layer aborts the process on a threadgroup allocation above the device's reported limit. It is on
// with MTL_DEBUG_LAYER (any value but 0) and with METAL_DEVICE_WRAPPER_TYPE=1, which Xcode's API validation sets.
bool validationLayerOn() {
  const char *debug = getenv("MTL_DEBUG_LAYER");
  const char *wrapper = getenv("METAL_DEVICE_WRAPPER_TYPE");
  return (debug != nullptr && *debug != '\0' && strcmp(debug, "0") != 0) ||
         (wrapper != nullptr && strcmp(wrapper, "1") == 0);
}

}  // namespace

// A size counts as proven only when many threadgroups used it at once: a lone threadgroup can spill into on-core
// memory no other threadgroup is using and still read its words back, while the engines' dispatches run many
// threadgroups side by side, which would then overwrite each other. So every size is dispatched as
// options.threadgroupGroups threadgroups (1024 by default: several times what every GPU core holds), each filling
// its whole allocation with its own pattern and reading all of it back, twice; each reports how many words it checked
// and how many were wrong, and every threadgroup's report is checked.
ProbeOutcome runThreadgroupMemory(ProbeContext &ctx) {
  const DoctorProbe probe = DoctorProbe::ThreadgroupMemory;
  const std::vector<uint64_t> &sizes = ctx.options.threadgroupSizes;
  if (sizes.empty()) return makeOutcome(probe, DoctorStatus::Skipped, "no threadgroup sizes were asked for");
  const uint32_t groups = std::max<uint32_t>(1, ctx.options.threadgroupGroups);
  Pipeline pipeline;
  if (!buildPipeline(ctx, kThreadgroupKernel, &pipeline)) return unbuilt(probe, pipeline);
  id<MTLComputePipelineState> state = pipeline.state.get();
  NSUInteger threads = std::min<NSUInteger>(256, maxThreads(state));
  if (threads == 0) return tooFewThreads(probe, state, 1);
  NSUInteger staticLength = [state staticThreadgroupMemoryLength];
  // The stock answer, never the one a profile installed: doctor's patched run raises it on purpose.
  const uint64_t stock = ctx.options.stockThreadgroupMemory;
  uint64_t ceiling = UINT64_MAX;
  std::string ceilingWhat = "the device's stock limit", ceilingWhy;
  if (!ctx.options.aboveStockThreadgroupMemory) {
    // A device that reports no limit still has one: no Apple GPU has more than kAppleGpuThreadgroupMemory.
    ceiling = stock > 0 ? stock : kAppleGpuThreadgroupMemory;
    if (stock == 0) ceilingWhat = "the device reports no limit, and no Apple GPU has more";
    ceilingWhy = "this host is not known to be a virtual machine, where a threadgroup above the device's own limit "
                 "is undefined behaviour";
  } else if (validationLayerOn() && stock > 0) {
    ceiling = stock;
    ceilingWhy = "Metal's validation layer (MTL_DEBUG_LAYER or METAL_DEVICE_WRAPPER_TYPE=1) is on";
  }
  Owned<id<MTLCommandQueue>> queue([ctx.device newCommandQueue]);
  if (!queue) return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no command queue");

  std::optional<uint64_t> proven, accepted, failed;
  std::string why;
  DoctorStatus failure = DoctorStatus::Pass;
  for (uint64_t size : sizes) {
    if (size > ceiling) {
      why = "sizes above " + formatBytes(ceiling) + " (" + ceilingWhat + ") not tried: " + ceilingWhy;
      break;
    }
    // Dynamic lengths must be multiples of 16 bytes, and the kernel's static allocation counts against the total.
    uint64_t dynamic = size > staticLength ? (size - staticLength) & ~uint64_t(15) : 0;
    uint32_t words = static_cast<uint32_t>(dynamic / 4);
    if (words == 0) {
      failed = size;
      failure = DoctorStatus::Fail;
      why = formatBytes(size) + " leaves no room beside the kernel's static " + formatBytes(staticLength);
      break;
    }
    // Per threadgroup: words checked, words wrong, both counted up from zero, so a threadgroup that never ran is seen.
    Owned<id<MTLBuffer>> out(newSharedBuffer(ctx.device, nullptr, 2 * static_cast<size_t>(groups) * sizeof(uint32_t)));
    Owned<id<MTLBuffer>> count(newSharedBuffer(ctx.device, &words, sizeof(words)));
    if (!out || !count) return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no buffer");
    DispatchSpec spec;
    spec.pipeline = state;
    spec.buffers = {out.get(), count.get()};
    spec.threadgroups = MTLSizeMake(groups, 1, 1);
    spec.threadsPerThreadgroup = MTLSizeMake(threads, 1, 1);
    spec.threadgroupMemory = static_cast<NSUInteger>(dynamic);
    GpuFailure error;
    Completion done = dispatch(queue.get(), spec, ctx.deadline, &error);
    // A size the GPU rejects is a measurement; a GPU that stopped taking work (a hang, access revoked) ends the probe.
    if (done == Completion::TimedOut || (done == Completion::Failed && leavesGpuUnusable(error.code))) {
      ProbeOutcome o = incomplete(probe, done, error, ctx.deadline, "the dispatch with " + formatBytes(size));
      o.provenThreadgroupMemory = proven;
      o.acceptedThreadgroupMemory = accepted;
      return o;
    }
    if (done == Completion::Failed) {
      failed = size;
      failure = proven ? DoctorStatus::Pass : DoctorStatus::Fail;
      why = formatBytes(size) + " rejected: " + error.text;
      break;
    }
    const uint32_t *got = contentsOf<uint32_t>(out.get());
    uint32_t badGroups = 0, firstBad = 0;
    uint64_t wrongWords = 0;
    for (uint32_t g = 0; g < groups; g++) {
      uint32_t checked = got[2 * g], wrong = got[2 * g + 1];
      if (checked != 2 * words || wrong != 0) {
        if (badGroups++ == 0) firstBad = g;
        wrongWords += checked != 2 * words ? 2 * words : wrong;
      }
    }
    if (badGroups > 0) {
      failed = size;
      failure = DoctorStatus::WrongResult;
      why = formatBytes(size) + " accepted but computed wrong under " + std::to_string(groups) +
            " concurrent threadgroups: " + std::to_string(badGroups) + " of them read back words they did not write (" +
            std::to_string(wrongWords) + " wrong words; first threadgroup " + std::to_string(firstBad) + ")";
      break;
    }
    (size > ctx.options.provableThreadgroupMemory ? accepted : proven) = size;
  }
  DoctorStatus status = failure == DoctorStatus::Pass && !proven && !accepted ? DoctorStatus::Skipped : failure;
  std::string detail;
  if (proven) {
    detail = formatBytes(*proven) + " proven by " + std::to_string(groups) + " concurrent threadgroups of " +
             std::to_string((unsigned long)threads) + " threads";
  }
  if (accepted) {
    detail += (detail.empty() ? "" : "; ") + formatBytes(*accepted) +
              " accepted and computed right, unverifiable: threadgroups above " +
              formatBytes(ctx.options.provableThreadgroupMemory) + " may never share a GPU core";
  }
  if (!why.empty()) detail += (detail.empty() ? "" : "; ") + why;
  if (!failed && (proven || accepted) && why.empty()) detail += " (the largest size asked for)";
  ProbeOutcome o = makeOutcome(probe, status, detail);
  o.provenThreadgroupMemory = proven;
  o.acceptedThreadgroupMemory = accepted;
  o.failedThreadgroupMemory = failed;
  return o;
}

// ---- residency-set ----

ProbeOutcome runResidencySet(ProbeContext &ctx) {
  const DoctorProbe probe = DoctorProbe::ResidencySet;
  SEL newSet = sel_registerName("newResidencySetWithDescriptor:error:");
  // objc_getClass, not NSClassFromString(@"…"): a string literal needs CoreFoundation, which the addon does not link.
  Class descriptorClass = objc_getClass("MTLResidencySetDescriptor");
  if (descriptorClass == Nil || ![(id)ctx.device respondsToSelector:newSet]) {
    return makeOutcome(probe, DoctorStatus::Unsupported,
                       "this OS has no residency sets (newResidencySetWithDescriptor:error: is macOS 15 API)");
  }
  constexpr uint32_t kWords = 1024;
  constexpr NSUInteger kGroup = 64;
  Pipeline pipeline;
  if (!buildPipeline(ctx, kResidentReadKernel, &pipeline)) return unbuilt(probe, pipeline);
  if (maxThreads(pipeline.state.get()) < kGroup) return tooFewThreads(probe, pipeline.state.get(), kGroup);

  Owned<id> descriptor([[descriptorClass alloc] init]);
  NSError *error = nil;
  using NewSetFn = id (*)(id, SEL, id, NSError **);
  NewSetFn create = reinterpret_cast<NewSetFn>(class_getMethodImplementation(object_getClass((id)ctx.device), newSet));
  Owned<id> set(create((id)ctx.device, newSet, descriptor.get(), &error));
  if (!set) {
    // Like a kernel that cannot be built: the feature's object cannot be made (judged against the families that gate
    // it, lib/doctor/judge.ts), unlike a failure once the set exists, which is a fault on every device.
    ProbeOutcome o =
        makeOutcome(probe, DoctorStatus::Fail, "newResidencySetWithDescriptor:error: failed: " + errorText(error));
    o.buildFailed = true;
    return o;
  }

  WordBuffers words;
  makeWordBuffers(ctx.device, kWords, 2246822519u, 374761393u, &words);
  if (!words.ok()) return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no buffer or queue");
  if (!callWithObject(set.get(), "addAllocation:", (id)words.in.get()) || !callVoid(set.get(), "commit")) {
    return makeOutcome(probe, DoctorStatus::Fail, "the residency set does not answer addAllocation: and commit");
  }
  callVoid(set.get(), "requestResidency");
  SEL allocationCount = sel_registerName("allocationCount");
  if ([set.get() respondsToSelector:allocationCount]) {
    using CountFn = NSUInteger (*)(id, SEL);
    NSUInteger n = reinterpret_cast<CountFn>(
        class_getMethodImplementation(object_getClass(set.get()), allocationCount))(set.get(), allocationCount);
    if (n != 1) {
      callVoid(set.get(), "endResidency");
      return makeOutcome(
          probe, DoctorStatus::WrongResult,
          "the residency set counts " + std::to_string((unsigned long)n) + " allocations after adding one buffer");
    }
  }
  DispatchSpec spec;
  spec.pipeline = pipeline.state.get();
  spec.buffers = {words.in.get(), words.out.get()};
  spec.threadgroups = MTLSizeMake(kWords / kGroup, 1, 1);
  spec.threadsPerThreadgroup = MTLSizeMake(kGroup, 1, 1);
  spec.residencySet = set.get();
  GpuFailure failure;
  Completion done = dispatch(words.queue.get(), spec, ctx.deadline, &failure);
  if (done == Completion::TimedOut) {
    // Command buffers retain the buffers they bind, but Apple documents no such promise for a residency set it uses;
    // a pending one keeps the set alive.
    set.abandon();
    return incomplete(probe, done, failure, ctx.deadline, "the dispatch using the residency set");
  }
  callVoid(set.get(), "endResidency");
  callVoid(set.get(), "removeAllAllocations");
  if (done == Completion::Failed)
    return incomplete(probe, done, failure, ctx.deadline, "the dispatch using the residency set");
  const uint32_t *got = contentsOf<uint32_t>(words.out.get());
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < kWords; i++) wrong += got[i] != (words.seeds[i] ^ 2779096485u) ? 1 : 0;
  if (wrong > 0) {
    return makeOutcome(probe, DoctorStatus::WrongResult,
                       "a kernel reading the resident buffer got " + std::to_string(wrong) + " of " +
                           std::to_string(kWords) + " words wrong");
  }
  return makeOutcome(
      probe, DoctorStatus::Pass,
      "a residency set was created, given a buffer, committed, and used by a dispatch that read it right");
}

}  // namespace mcs
