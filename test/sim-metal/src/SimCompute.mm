/*
 * The simulated Metal's compute subset: libraries from source, functions by name, compute pipelines, command queues,
 * command buffers and compute encoders, buffers (NoCopy included) and, where the snapshot's macOS has them, residency
 * sets. The simulated "GPU" runs a C++ implementation of each kernel doctor knows, looked up by function name; it
 * never parses MSL beyond finding `kernel void NAME`. What it tests is doctor's plumbing and decisions. Whether the
 * MSL is right, and what a real GPU computes, only a Mac can tell (test/live/).
 *
 * Faults come from the device's `doctor` section (snapshots/README.md; the simulated-only faults and the `simulation`
 * settings below are a simulation file's, test/sim-metal/README.md):
 *   wrong-result  the kernel computes a wrong answer (bfloat: truncates instead of rounding to nearest even; heap:
 *                 the write to the placed buffer's first word is lost;
 *                 threadgroup-memory with provenThreadgroupMemory N: memory past N reads as zero)
 *   fail          pipeline creation fails (nocopy-mmap: the NoCopy buffer is nil; residency-set: set creation fails;
 *                 heap: newHeapWithDescriptor: gives nil)
 *   unsupported   the library is rejected for its language version (residency-set, heap: the API is absent)
 *   timeout       the command buffer never completes
 *   error         committing the command buffer raises an NSException, as Metal raises for misuse it detects
 *   pass + provenThreadgroupMemory N: dispatches asking for more than N bytes of threadgroup memory fail
 *   threadgroup-memory fault `answered-limit` (with pass): dispatches asking for more threadgroup memory than the
 *                     device *answers* (maxThreadgroupMemoryLength, patched or not) fail, so a profile that raises
 *                     the answer proves more; the only simulated behaviour that looks at the device's answers
 *   nocopy-mmap fault `stale`: the GPU reads the pages as they were when the buffer was created;
 *                     fault `zero-length`: the buffer reports a length of 0
 *   threadgroup-memory fault `threadgroups-overlap` (with wrong-result and provenThreadgroupMemory N): threadgroups
 *                     that run at the same time overlap above N bytes, each one's allocation running into the next
 *                     one's, so concurrent threadgroups corrupt each other while a lone threadgroup works
 *   fault `compile` (with timeout, any probe): Metal's compiler never finishes the probe's library; the GPU works
 *   fault `commit` (with timeout, any probe): committing the probe's command buffer never returns (a blocking call
 *                 no per-probe deadline can bound: the parent of doctor's runner kills it)
 *   aborted       committing the probe's command buffer calls abort(), as a Metal debug-layer assertion does
 *   page-fault, access-revoked, not-permitted, out-of-memory, device-removed: the command buffer fails in
 *                 MTLCommandBufferErrorDomain with that code (MTLCommandBufferError)
 * A device's `simulation.revokesAfterTimeout` (true): once one of its command buffers has hung, every later one fails
 * with MTLCommandBufferErrorAccessRevoked, as Metal revokes a client "responsible for too many timeouts or hangs".
 * A device's `simulation.threadExecutionWidth` (default 32) is its pipelines' SIMD-group width.
 * A device's `simulation.compileMs` makes each asynchronous library compile take that long (the call returns after
 * it, its handler run), and `simulation.gpuMs` each command buffer: it reports `committed` for that long after its
 * commit, then `completed`.
 * A NoCopy buffer released after its memory was unmapped is counted (MTLSimGetNoCopyAfterUnmap): Metal may still
 * read the memory then (AdaptiveCpp PR 2067's crash).
 * A descriptor on a doctor-generated file that is open without close-on-exec when a NoCopy buffer is made is counted
 * (MTLSimGetInheritableDoctorFiles): a program started then would inherit it.
 * The pages under a NoCopy buffer that are not resident when it is made are counted (MTLSimGetNoCopyColdPages): on a
 * Mac the first dispatch reads them from disk, inside the probe's deadline.
 * Anything else (not-recorded, absent, skipped) is a device that works.
 */
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <objc/runtime.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <Block.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "SimCompute.h"

NSString *const MTLLibraryErrorDomain = @"MTLLibraryErrorDomain";
NSString *const MTLCommandBufferErrorDomain = @"MTLCommandBufferErrorDomain";

namespace {

// Faults injected by the simulation itself (not Apple's domains) say so in their domain.
NSString *const kSimErrorDomain = @"MetalSim";

enum class Probe { Reduction, Matrix, Bfloat, Threadgroup, Nocopy, Residency, Heap };
const char *const kProbeIds[] = {"simdgroup-reduction", "simdgroup-matrix", "bfloat", "threadgroup-memory",
                                 "nocopy-mmap",         "residency-set",    "heap"};
constexpr size_t kProbeCount = sizeof(kProbeIds) / sizeof(kProbeIds[0]);

enum class Behaviour { Works, WrongResult, Fail, Unsupported, Hangs, Raises, Aborts, GpuError };

struct ProbeFault {
  Behaviour behaviour = Behaviour::Works;
  std::string detail;
  uint64_t threadgroupLimit = 0;  // provenThreadgroupMemory; 0: none recorded
  std::string fault;  // nocopy-mmap: stale | zero-length; threadgroup-memory: answered-limit, threadgroups-overlap
  bool compileHangs = false;                                   // fault `compile`: the library never finishes compiling
  bool commitBlocks = false;                                   // fault `commit`: commit never returns
  MTLCommandBufferError gpuError = MTLCommandBufferErrorNone;  // Behaviour::GpuError: the code
};

struct ComputeDevice {
  id object = nil;
  int osMajor = 0;  // 0: the snapshot records no macOS version
  uint64_t simdWidth = 32;
  uint64_t compileMs = 0;            // simulation.compileMs: how long each asynchronous library compile takes
  uint64_t gpuMs = 0;                // simulation.gpuMs: how long each command buffer runs after its commit
  bool revokesAfterTimeout = false;  // simulation.revokesAfterTimeout
  std::atomic<bool> revoked{false};  // a command buffer hung on a device that revokes after a timeout
  ProbeFault probes[kProbeCount];
  ComputeDevice() = default;
  ComputeDevice(ComputeDevice &&other) noexcept
      : object(other.object),
        osMajor(other.osMajor),
        simdWidth(other.simdWidth),
        compileMs(other.compileMs),
        gpuMs(other.gpuMs),
        revokesAfterTimeout(other.revokesAfterTimeout),
        revoked(other.revoked.load()) {
    for (size_t i = 0; i < kProbeCount; i++) probes[i] = other.probes[i];
  }
};

std::atomic<unsigned long> gNoCopyAfterUnmap{0};
std::atomic<unsigned long> gNoCopyWithoutDeallocator{0};
std::atomic<unsigned long> gInheritableDoctorFiles{0};
std::atomic<unsigned long> gNoCopyColdPages{0};

// Counts the pages of [pointer, pointer + length) that are not in memory: a file-backed mapping's pages are resident
// once the file's pages are in the page cache, however they got there.
void countColdPages(void *pointer, size_t length, size_t page) {
  std::vector<unsigned char> resident(length / page);
  if (mincore(pointer, length, resident.data()) != 0) return;
  unsigned long cold = 0;
  for (unsigned char r : resident) cold += (r & 1) == 0 ? 1 : 0;
  gNoCopyColdPages.fetch_add(cold);
}

// Counts this process's descriptors on a doctor-generated file that a program started now would inherit (no
// FD_CLOEXEC), read from /proc/self/fd: called when a NoCopy buffer is made, while doctor holds the file open.
void countInheritableDoctorFiles() {
  DIR *dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (struct dirent *entry = readdir(dir)) {
    int fd = atoi(entry->d_name);
    if (fd < 3 || fd == dirfd(dir)) continue;
    char target[4096];
    ssize_t n = readlink((std::string("/proc/self/fd/") + entry->d_name).c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strstr(target, "/metal-cap-shim-doctor-") == nullptr) continue;
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0) gInheritableDoctorFiles.fetch_add(1);
  }
  closedir(dir);
}

// By device record index; reserved for kSimMaxDeviceRecords at the first device and never reallocated, so a record
// stays where it is while the GPU thread of an earlier snapshot's device still reads it.
std::vector<ComputeDevice> gCompute;

const ProbeFault &faultOf(size_t device, Probe probe) {
  return gCompute[device].probes[static_cast<int>(probe)];
}

size_t indexOfDevice(id device) {
  for (size_t i = 0; i < gCompute.size(); i++) {
    if (gCompute[i].object == device) return i;
  }
  return 0;
}

// The newest MSL each macOS compiles; unknown: no limit.
NSUInteger maxLanguageFor(int osMajor) {
  if (osMajor == 0) return NSUIntegerMax;
  if (osMajor < 11) return 0x20002;
  if (osMajor == 11) return 0x20003;
  if (osMajor == 12) return 0x20004;
  if (osMajor == 13) return 0x30000;
  if (osMajor == 14) return 0x30001;
  if (osMajor == 15) return 0x30002;
  return 0x40000;
}

std::string languageName(NSUInteger v) {
  return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff);
}

NSError *simError(NSString *domain, NSInteger code, const std::string &message) {
  NSDictionary *info = [NSDictionary dictionaryWithObject:[NSString stringWithUTF8String:message.c_str()]
                                                   forKey:NSLocalizedDescriptionKey];
  return [NSError errorWithDomain:domain code:code userInfo:info];
}

std::string recorded(const ProbeFault &fault) {
  return "recorded in the snapshot" + (fault.detail.empty() ? std::string() : ": " + fault.detail);
}

// ---- the kernels ----

struct Binding {
  id buffer = nil;  // SimBuffer, retained
  NSUInteger offset = 0;
};

struct Dispatch {
  id pipeline = nil;  // SimPipeline, retained
  Binding buffers[31];
  NSUInteger threadgroupMemory[31] = {};
  MTLSize groups = {0, 0, 0};
  MTLSize threads = {0, 0, 0};
};

void retainDispatch(Dispatch &d) {
  [d.pipeline retain];
  for (Binding &b : d.buffers) [b.buffer retain];
}

void releaseDispatch(Dispatch &d) {
  [d.pipeline release];
  for (Binding &b : d.buffers) [b.buffer release];
}

struct KernelRun;
using KernelFn = void (*)(KernelRun &);

struct SimKernel {
  const char *name;
  Probe probe;
  NSUInteger minLanguage;
  KernelFn run;
};

const SimKernel *kernelNamed(const std::string &name);

}  // namespace

@interface SimBuffer : NSObject <MTLBuffer> {
 @public
  void *_contents;       // what the CPU sees
  void *_gpu;            // what the simulated GPU reads: _contents, or a stale copy
  NSUInteger _length;    // the real length
  NSUInteger _reported;  // what -length answers
  BOOL _ownsContents;
  BOOL _ownsGpuCopy;
  id _device;
  id _heap;                              // retained: the heap the buffer was placed in, or nil
  MTLNewBufferDeallocator _deallocator;  // NoCopy: copied; called with the memory once the buffer is released
}
@end

@implementation SimBuffer
- (void)dealloc {
  // A NoCopy buffer over memory that is no longer mapped: Metal could still read it now.
  if (!_ownsContents && _contents != NULL) {
    unsigned char resident = 0;
    if (mincore(_contents, static_cast<size_t>(sysconf(_SC_PAGESIZE)), &resident) != 0 && errno == ENOMEM) {
      gNoCopyAfterUnmap.fetch_add(1);
    }
  }
  if (_deallocator != nil) {
    _deallocator(_contents, _length);
    Block_release(_deallocator);
  }
  if (_ownsContents) free(_contents);
  if (_ownsGpuCopy) free(_gpu);
  [_heap release];
  [super dealloc];
}
- (id<MTLHeap>)heap {
  return _heap;
}
- (NSUInteger)length {
  return _reported;
}
- (void *)contents {
  return _contents;
}
- (id<MTLDevice>)device {
  return _device;
}
@end

namespace {

constexpr uint64_t kSimdWidth = 32;

struct KernelRun {
  const Dispatch &dispatch;
  const ProbeFault &fault;
  uint64_t simdWidth;
  std::string error;

  uint64_t threadsPerGroup() const { return dispatch.threads.width * dispatch.threads.height * dispatch.threads.depth; }
  uint64_t totalThreads() const {
    return threadsPerGroup() * dispatch.groups.width * dispatch.groups.height * dispatch.groups.depth;
  }
  // The bound buffer at `index`, checked to hold `count` elements: a kernel reading past it is a page fault.
  template <typename T>
  T *at(NSUInteger index, uint64_t count) {
    if (!error.empty()) return nullptr;
    SimBuffer *b = (SimBuffer *)dispatch.buffers[index].buffer;
    if (b == nil) {
      error = "buffer index " + std::to_string((unsigned long)index) + " is not bound";
      return nullptr;
    }
    uint64_t offset = dispatch.buffers[index].offset;
    if (offset + count * sizeof(T) > b->_length) {
      error = "page fault: the kernel reads " + std::to_string(count * sizeof(T)) + " bytes at buffer index " +
              std::to_string((unsigned long)index) + ", which holds " + std::to_string((unsigned long)b->_length);
      return nullptr;
    }
    return reinterpret_cast<T *>(static_cast<uint8_t *>(b->_gpu) + offset);
  }
};

bool wrong(const KernelRun &k) {
  return k.fault.behaviour == Behaviour::WrongResult;
}

void simdReduce(KernelRun &k) {
  uint64_t n = k.totalThreads(), group = k.threadsPerGroup();
  const float *in = k.at<float>(0, n);
  float *sums = k.at<float>(1, n);
  float *maxima = k.at<float>(2, n);
  uint32_t *width = k.at<uint32_t>(3, 1);
  if (!k.error.empty()) return;
  for (uint64_t g = 0; g < n; g += group) {
    for (uint64_t s = g; s < g + group; s += k.simdWidth) {
      uint64_t end = std::min(s + k.simdWidth, g + group);
      float sum = 0, max = -INFINITY;
      for (uint64_t i = s; i < end; i++) {
        if (!(wrong(k) && i == end - 1)) sum += in[i];  // the fault: a lost lane
        max = std::max(max, in[i]);
      }
      for (uint64_t i = s; i < end; i++) {
        sums[i] = sum;
        maxima[i] = max;
      }
    }
  }
  width[0] = static_cast<uint32_t>(k.simdWidth);
}

// Half precision as the simulated GPU rounds it: to 11 significant bits, ties to even (std::nearbyint).
float toHalfPrecision(double v) {
  if (v == 0 || !std::isfinite(v)) return static_cast<float>(v);
  double magnitude = std::fabs(v);
  double r;
  if (magnitude < std::ldexp(1.0, -14)) {
    r = std::ldexp(std::nearbyint(std::ldexp(magnitude, 24)), -24);
  } else {
    int e;
    double m = std::frexp(magnitude, &e);
    r = std::ldexp(std::nearbyint(std::ldexp(m, 11)), e - 11);
    if (r >= 65520.0) r = INFINITY;
  }
  return static_cast<float>(v < 0 ? -r : r);
}

uint16_t halfStorage(float v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double magnitude = std::fabs(static_cast<double>(v));
  if (std::isinf(magnitude)) return sign | 0x7c00;
  if (magnitude < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(std::ldexp(magnitude, 24));
  int e;
  double m = std::frexp(magnitude, &e);
  uint16_t significand = static_cast<uint16_t>(std::ldexp(m, 11));  // exact: v already has half precision
  return sign | static_cast<uint16_t>((e + 14) << 10) | static_cast<uint16_t>(significand - 1024);
}

float halfValue(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f, significand = bits & 0x3ff;
  double v = exponent == 0    ? std::ldexp(significand, -24)
             : exponent == 31 ? INFINITY
                              : std::ldexp(significand + 1024, exponent - 25);
  return static_cast<float>((bits & 0x8000) != 0 ? -v : v);
}

template <bool Half>
void matmul(KernelRun &k) {
  using Storage = typename std::conditional<Half, uint16_t, float>::type;
  const uint32_t *np = k.at<uint32_t>(3, 1);
  if (!k.error.empty()) return;
  uint64_t n = *np;
  if (k.threadsPerGroup() != kSimdWidth) {
    k.error = "a SIMD-group matrix kernel needs threadgroups of one 32-thread SIMD-group";
    return;
  }
  const Storage *a = k.at<Storage>(0, n * n);
  const Storage *b = k.at<Storage>(1, n * n);
  Storage *c = k.at<Storage>(2, n * n);
  if (!k.error.empty()) return;
  auto load = [](Storage s) -> double {
    if constexpr (Half) return halfValue(s);
    return s;
  };
  for (uint64_t ty = 0; ty < k.dispatch.groups.height; ty++) {
    for (uint64_t tx = 0; tx < k.dispatch.groups.width; tx++) {
      if ((ty + 1) * 8 > n || (tx + 1) * 8 > n) {
        k.error = "page fault: tile (" + std::to_string(tx) + ", " + std::to_string(ty) + ") lies outside the matrix";
        return;
      }
      for (uint64_t r = 0; r < 8; r++) {
        for (uint64_t col = 0; col < 8; col++) {
          double acc = 0;
          for (uint64_t kk = 0; kk < n; kk++) {
            acc += load(a[(ty * 8 + r) * n + kk]) * load(b[kk * n + tx * 8 + col]);
            if (Half && kk % 8 == 7) acc = toHalfPrecision(acc);
          }
          Storage &out = c[(ty * 8 + r) * n + tx * 8 + col];
          if constexpr (Half) {
            out = halfStorage(toHalfPrecision(acc));
          } else {
            out = static_cast<float>(acc);
          }
        }
      }
    }
  }
  if (wrong(k)) {
    if constexpr (Half) {
      c[0] = halfStorage(toHalfPrecision(halfValue(c[0]) + 1.0));
    } else {
      c[0] += 1.0f;
    }
  }
}

// bfloat as the simulated GPU rounds it: to 8 significant bits, ties to even; the fault truncates instead.
float toBfloat(double v, bool truncate) {
  if (v == 0 || !std::isfinite(v)) return static_cast<float>(v);
  int e;
  double m = std::frexp(v, &e);
  double scaled = std::ldexp(m, 8);
  return static_cast<float>(std::ldexp(truncate ? std::trunc(scaled) : std::nearbyint(scaled), e - 8));
}

void bfloatKernel(KernelRun &k) {
  uint64_t n = k.totalThreads();
  const float *x = k.at<float>(0, n);
  const float *y = k.at<float>(1, n);
  float *converted = k.at<float>(2, n);
  float *sums = k.at<float>(3, n);
  float *products = k.at<float>(4, n);
  if (!k.error.empty()) return;
  bool truncate = wrong(k);
  for (uint64_t i = 0; i < n; i++) {
    float bx = toBfloat(x[i], truncate), by = toBfloat(y[i], truncate);
    converted[i] = bx;
    sums[i] = toBfloat(static_cast<double>(bx) + by, truncate);
    products[i] = toBfloat(static_cast<double>(bx) * by, truncate);
  }
}

// doctor's threadgroup kernel: every threadgroup fills its allocation with its own pattern and reads it back, twice,
// and adds the words it checked and the wrong ones to report[2g] and report[2g + 1]. The simulated GPU runs
// threadgroups in waves of kResident at once, each in its own slot of on-core memory. With `threadgroups-overlap`
// the slots are N bytes apart, so above N a threadgroup's allocation runs into the next slot, which the next
// threadgroup of its wave writes too; a wave of one is alone and reads back what it wrote.
constexpr uint64_t kResident = 8;

uint32_t groupSeed(uint64_t group, uint32_t round) {
  return static_cast<uint32_t>(group) * 2246822519u + round * 3266489917u + 374761393u;
}

void threadgroupKernel(KernelRun &k) {
  const uint32_t *wordsp = k.at<uint32_t>(1, 1);
  if (!k.error.empty()) return;
  uint64_t words = *wordsp, length = k.dispatch.threadgroupMemory[0];
  uint64_t groups = k.dispatch.groups.width * k.dispatch.groups.height * k.dispatch.groups.depth;
  uint32_t *report = k.at<uint32_t>(0, 2 * groups);
  if (!k.error.empty()) return;
  if (words * 4 > length) {
    k.error = "page fault: the kernel used " + std::to_string(words * 4) + " bytes of threadgroup memory; " +
              std::to_string(length) + " were allocated";
    return;
  }
  bool overlap = wrong(k) && k.fault.fault == "threadgroups-overlap";
  // Without the overlap fault, a wrong-result device backs only the recorded size: memory past it reads as zero.
  uint64_t backed = wrong(k) && !overlap ? std::min<uint64_t>(words, k.fault.threadgroupLimit / 4) : words;
  uint64_t slot = overlap ? std::max<uint64_t>(1, k.fault.threadgroupLimit / 4) : words;
  std::vector<uint32_t> memory((kResident + 1) * std::max(slot, words));
  for (uint64_t first = 0; first < groups; first += kResident) {
    uint64_t wave = std::min(kResident, groups - first);
    uint64_t checked[kResident] = {}, bad[kResident] = {};
    for (uint32_t round = 0; round < 2; round++) {
      for (uint64_t s = 0; s < wave; s++) {
        uint32_t *scratch = memory.data() + s * slot;
        const uint32_t seed = groupSeed(first + s, round);
        const uint32_t n = static_cast<uint32_t>(backed), all = static_cast<uint32_t>(words);
        for (uint32_t i = 0; i < n; i++) scratch[i] = (i * 2654435761u) ^ seed;
        for (uint32_t i = n; i < all; i++) scratch[i] = 0;
      }
      for (uint64_t s = 0; s < wave; s++) {
        const uint32_t *scratch = memory.data() + s * slot;
        const uint32_t seed = groupSeed(first + s, round);
        const uint32_t all = static_cast<uint32_t>(words);
        uint32_t differ = 0;
        for (uint32_t i = 0; i < all; i++) differ += scratch[i] != ((i * 2654435761u) ^ seed) ? 1u : 0u;
        bad[s] += differ;
        checked[s] += words;
      }
    }
    for (uint64_t s = 0; s < wave; s++) {
      report[2 * (first + s)] += static_cast<uint32_t>(checked[s]);
      report[2 * (first + s) + 1] += static_cast<uint32_t>(bad[s]);
    }
  }
}

void blockChecksum(KernelRun &k) {
  const uint32_t *wpb = k.at<uint32_t>(3, 1);
  const uint32_t *blocksp = k.at<uint32_t>(4, 1);
  if (!k.error.empty()) return;
  uint32_t wordsPerBlock = *wpb, blocks = *blocksp;
  const uint64_t *first = k.at<uint64_t>(1, blocks);
  uint32_t *sums = k.at<uint32_t>(2, blocks);
  if (!k.error.empty()) return;
  uint64_t n = std::min<uint64_t>(k.totalThreads(), blocks);
  for (uint64_t gid = 0; gid < n; gid++) {
    const uint32_t *data = k.at<uint32_t>(0, first[gid] + wordsPerBlock);
    if (data == nullptr) return;
    uint32_t hash = 2166136261u;
    for (uint32_t i = 0; i < wordsPerBlock; i++) hash = (hash ^ data[first[gid] + i]) * 16777619u;
    sums[gid] = hash;
  }
}

void residentRead(KernelRun &k) {
  uint64_t n = k.totalThreads();
  const uint32_t *in = k.at<uint32_t>(0, n);
  uint32_t *out = k.at<uint32_t>(1, n);
  if (!k.error.empty()) return;
  for (uint64_t i = 0; i < n; i++) out[i] = in[i] ^ 2779096485u;
  if (wrong(k)) out[0] ^= 1;
}

void heapWrite(KernelRun &k) {
  uint64_t n = k.totalThreads();
  const uint32_t *seed = k.at<uint32_t>(0, n);
  uint32_t *placed = k.at<uint32_t>(1, n);
  if (!k.error.empty()) return;
  // The fault: the write to the first word never reaches the heap's memory.
  for (uint64_t i = wrong(k) ? 1 : 0; i < n; i++) placed[i] = seed[i] * 2654435761u + 40503u;
}

void heapRead(KernelRun &k) {
  uint64_t n = k.totalThreads();
  const uint32_t *placed = k.at<uint32_t>(0, n);
  uint32_t *out = k.at<uint32_t>(1, n);
  if (!k.error.empty()) return;
  for (uint64_t i = 0; i < n; i++) out[i] = placed[i] ^ 2654435769u;
}

const SimKernel kKernels[] = {
    {"mcs_doctor_simd_reduce", Probe::Reduction, 0x20000, simdReduce},
    {"mcs_doctor_matmul_f32", Probe::Matrix, 0x20003, matmul<false>},
    {"mcs_doctor_matmul_f16", Probe::Matrix, 0x20003, matmul<true>},
    {"mcs_doctor_bfloat", Probe::Bfloat, 0x30001, bfloatKernel},
    {"mcs_doctor_threadgroup", Probe::Threadgroup, 0x10000, threadgroupKernel},
    {"mcs_doctor_block_checksum", Probe::Nocopy, 0x10000, blockChecksum},
    {"mcs_doctor_resident_read", Probe::Residency, 0x10000, residentRead},
    {"mcs_doctor_heap_write", Probe::Heap, 0x10000, heapWrite},
    {"mcs_doctor_heap_read", Probe::Heap, 0x10000, heapRead},
};

const SimKernel *kernelNamed(const std::string &name) {
  for (const SimKernel &k : kKernels) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

// The functions a library exports, as Metal's compiler names them: each `kernel void NAME(` that is not a template,
// and each explicit instantiation's [[host_name("NAME")]].
std::vector<std::string> kernelNamesIn(const std::string &source) {
  std::vector<std::string> names;
  auto nameAt = [&](size_t pos) {
    size_t end = pos;
    while (end < source.size() && (isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_')) end++;
    return source.substr(pos, end - pos);
  };
  const std::string marker = "kernel void ";
  for (size_t pos = source.find(marker); pos != std::string::npos; pos = source.find(marker, pos)) {
    size_t before = pos;
    while (before > 0 && isspace(static_cast<unsigned char>(source[before - 1]))) before--;
    pos += marker.size();
    bool templated = before > 0 && source[before - 1] == '>';
    std::string name = nameAt(pos);
    if (!templated && !name.empty()) names.push_back(name);
  }
  const std::string hostName = "[[host_name(\"";
  for (size_t pos = source.find(hostName); pos != std::string::npos; pos = source.find(hostName, pos)) {
    pos += hostName.size();
    std::string name = nameAt(pos);
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

}  // namespace

// ---- MTLCompileOptions: a class cluster, so Apple's header stays free of ivars (GCC's runtime has fragile ivars) ----

@interface SimCompileOptions : MTLCompileOptions {
  BOOL _fastMath;
  MTLLanguageVersion _language;
}
@end

@implementation MTLCompileOptions
+ (id)allocWithZone:(NSZone *)zone {
  if (self == [MTLCompileOptions class]) return [SimCompileOptions allocWithZone:zone];
  return [super allocWithZone:zone];
}
- (BOOL)fastMathEnabled {
  return YES;
}
- (void)setFastMathEnabled:(BOOL)enabled {
}
- (MTLLanguageVersion)languageVersion {
  return (MTLLanguageVersion)0;
}
- (void)setLanguageVersion:(MTLLanguageVersion)version {
}
- (id)copyWithZone:(NSZone *)zone {
  return [self retain];
}
@end

@implementation SimCompileOptions
- (id)init {
  if ((self = [super init])) _fastMath = YES;  // Apple's default
  return self;
}
- (BOOL)fastMathEnabled {
  return _fastMath;
}
- (void)setFastMathEnabled:(BOOL)enabled {
  _fastMath = enabled;
}
- (MTLLanguageVersion)languageVersion {
  return _language;
}
- (void)setLanguageVersion:(MTLLanguageVersion)version {
  _language = version;
}
- (id)copyWithZone:(NSZone *)zone {
  SimCompileOptions *copy = [[SimCompileOptions allocWithZone:zone] init];
  copy->_fastMath = _fastMath;
  copy->_language = _language;
  return copy;
}
@end

// ---- library, function, pipeline ----

@interface SimFunction : NSObject <MTLFunction> {
 @public
  NSString *_name;
  const SimKernel *_kernel;
  size_t _device;
}
@end

@implementation SimFunction
- (void)dealloc {
  [_name release];
  [super dealloc];
}
- (NSString *)name {
  return _name;
}
@end

@interface SimLibrary : NSObject <MTLLibrary> {
 @public
  NSArray *_names;
  size_t _device;
}
@end

@implementation SimLibrary
- (void)dealloc {
  [_names release];
  [super dealloc];
}
- (NSArray *)functionNames {
  return _names;
}
- (id<MTLFunction>)newFunctionWithName:(NSString *)functionName {
  if (![_names containsObject:functionName]) return nil;
  const SimKernel *kernel = kernelNamed([functionName UTF8String]);
  if (kernel == nullptr) return nil;
  SimFunction *f = [[SimFunction alloc] init];
  f->_name = [functionName copy];
  f->_kernel = kernel;
  f->_device = _device;
  return f;
}
@end

@interface SimPipeline : NSObject <MTLComputePipelineState> {
 @public
  const SimKernel *_kernel;
  size_t _device;
  NSUInteger _maxThreads;
}
@end

@implementation SimPipeline
- (NSUInteger)maxTotalThreadsPerThreadgroup {
  return _maxThreads;
}
- (NSUInteger)threadExecutionWidth {
  return (NSUInteger)gCompute[_device].simdWidth;
}
- (NSUInteger)staticThreadgroupMemoryLength {
  return 0;
}
@end

// ---- residency sets (macOS 15 API: class and selectors under Apple's names, found by run-time lookup) ----

@interface MTLResidencySetDescriptor : NSObject <NSCopying> {
  NSString *_label;
  NSUInteger _initialCapacity;
}
@end

@implementation MTLResidencySetDescriptor
- (void)dealloc {
  [_label release];
  [super dealloc];
}
- (NSString *)label {
  return _label;
}
- (void)setLabel:(NSString *)label {
  [_label release];
  _label = [label copy];
}
- (NSUInteger)initialCapacity {
  return _initialCapacity;
}
- (void)setInitialCapacity:(NSUInteger)capacity {
  _initialCapacity = capacity;
}
- (id)copyWithZone:(NSZone *)zone {
  MTLResidencySetDescriptor *copy = [[MTLResidencySetDescriptor allocWithZone:zone] init];
  [copy setLabel:_label];
  [copy setInitialCapacity:_initialCapacity];
  return copy;
}
@end

@interface SimResidencySet : NSObject {
 @public
  NSMutableArray *_allocations;
  id _device;
  BOOL _resident;
}
@end

@implementation SimResidencySet
- (id)init {
  if ((self = [super init])) _allocations = [[NSMutableArray alloc] init];
  return self;
}
- (void)dealloc {
  [_allocations release];
  [super dealloc];
}
- (id<MTLDevice>)device {
  return _device;
}
- (void)addAllocation:(id)allocation {
  if (![_allocations containsObject:allocation]) [_allocations addObject:allocation];
}
- (void)removeAllocation:(id)allocation {
  [_allocations removeObject:allocation];
}
- (void)removeAllAllocations {
  [_allocations removeAllObjects];
}
- (BOOL)containsAllocation:(id)allocation {
  return [_allocations containsObject:allocation];
}
- (NSUInteger)allocationCount {
  return [_allocations count];
}
- (void)commit {
}
- (void)requestResidency {
  _resident = YES;
}
- (void)endResidency {
  _resident = NO;
}
@end

// ---- heaps (MTLHeap.h) ----

@interface SimHeapDescriptor : MTLHeapDescriptor {
  NSUInteger _size;
  MTLResourceOptions _options;
}
@end

@implementation MTLHeapDescriptor
+ (id)allocWithZone:(NSZone *)zone {
  if (self == [MTLHeapDescriptor class]) return [SimHeapDescriptor allocWithZone:zone];
  return [super allocWithZone:zone];
}
- (NSUInteger)size {
  return 0;
}
- (void)setSize:(NSUInteger)size {
}
- (MTLStorageMode)storageMode {
  return MTLStorageModePrivate;
}
- (void)setStorageMode:(MTLStorageMode)mode {
}
- (MTLResourceOptions)resourceOptions {
  return MTLResourceStorageModePrivate;
}
- (void)setResourceOptions:(MTLResourceOptions)options {
}
- (id)copyWithZone:(NSZone *)zone {
  return [self retain];
}
@end

@implementation SimHeapDescriptor
- (id)init {
  // Apple's default storage mode for a heap is private.
  if ((self = [super init])) _options = MTLResourceStorageModePrivate;
  return self;
}
- (NSUInteger)size {
  return _size;
}
- (void)setSize:(NSUInteger)size {
  _size = size;
}
- (MTLStorageMode)storageMode {
  return (MTLStorageMode)((_options >> 4) & 0xf);
}
- (void)setStorageMode:(MTLStorageMode)mode {
  _options = (_options & ~(MTLResourceOptions)0xf0) | ((MTLResourceOptions)mode << 4);
}
- (MTLResourceOptions)resourceOptions {
  return _options;
}
- (void)setResourceOptions:(MTLResourceOptions)options {
  _options = options;
}
- (id)copyWithZone:(NSZone *)zone {
  SimHeapDescriptor *copy = [[SimHeapDescriptor allocWithZone:zone] init];
  copy->_size = _size;
  copy->_options = _options;
  return copy;
}
@end

@interface SimHeap : NSObject <MTLHeap> {
 @public
  id _device;
  NSUInteger _size;
  NSUInteger _used;
}
@end

@implementation SimHeap
- (id<MTLDevice>)device {
  return _device;
}
- (NSUInteger)size {
  return _size;
}
- (NSUInteger)usedSize {
  return _used;
}
// Placed buffers take 256-byte aligned slices; a request that does not fit gives nil, as Metal's does.
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options {
  NSUInteger aligned = (length + 255) & ~(NSUInteger)255;
  if (length == 0 || aligned > _size - _used) return nil;
  _used += aligned;
  SimBuffer *buffer = [[SimBuffer alloc] init];
  buffer->_length = buffer->_reported = length;
  buffer->_device = _device;
  buffer->_contents = buffer->_gpu = calloc(1, length);
  buffer->_ownsContents = YES;
  buffer->_heap = [self retain];
  return buffer;
}
@end

// ---- command queue, buffer, encoder ----

// A blit fill: `value` into `range` of `buffer`, run at commit before the dispatch encoded after it.
struct BlitFill {
  size_t beforeDispatch;
  SimBuffer *buffer;  // retained
  NSRange range;
  uint8_t value;
};

@interface SimCommandBuffer : NSObject <MTLCommandBuffer> {
 @public
  std::vector<Dispatch> *_dispatches;
  std::vector<BlitFill> *_fills;
  NSMutableArray *_residencySets;
  MTLCommandBufferStatus _status;
  NSError *_error;
  size_t _device;
  std::chrono::steady_clock::time_point _readyAt;  // a completed buffer reports `committed` until then (gpuMs)
}
@end

@interface SimComputeEncoder : NSObject <MTLComputeCommandEncoder> {
 @public
  SimCommandBuffer *_commandBuffer;  // not retained: the command buffer outlives its encoding
  Dispatch *_state;
}
@end

@implementation SimComputeEncoder
- (id)init {
  if ((self = [super init])) _state = new Dispatch();
  return self;
}
- (void)dealloc {
  releaseDispatch(*_state);
  delete _state;
  [super dealloc];
}
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state {
  [state retain];
  [_state->pipeline release];
  _state->pipeline = state;
}
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index {
  if (index >= 31) return;
  [buffer retain];
  [_state->buffers[index].buffer release];
  _state->buffers[index].buffer = buffer;
  _state->buffers[index].offset = offset;
}
- (void)setBytes:(const void *)bytes length:(NSUInteger)length atIndex:(NSUInteger)index {
  // Metal copies the bytes at this call; a private buffer does the same here.
  SimBuffer *copy = [[SimBuffer alloc] init];
  copy->_contents = copy->_gpu = malloc(length > 0 ? length : 1);
  memcpy(copy->_contents, bytes, length);
  copy->_length = copy->_reported = length;
  copy->_ownsContents = YES;
  [self setBuffer:copy offset:0 atIndex:index];
  [copy release];
}
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index {
  if (index < 31) _state->threadgroupMemory[index] = length;
}
- (void)dispatchThreadgroups:(MTLSize)groups threadsPerThreadgroup:(MTLSize)threads {
  Dispatch d = *_state;
  d.groups = groups;
  d.threads = threads;
  retainDispatch(d);
  _commandBuffer->_dispatches->push_back(d);
}
- (void)endEncoding {
}
@end

// The blit encoder's fill, which llama.cpp's device initialisation encodes (its residency-set workaround); Metal.h
// does not declare the blit encoder, since no code of the project uses it.
@interface SimBlitEncoder : NSObject {
 @public
  SimCommandBuffer *_commandBuffer;  // not retained, as for the compute encoder
}
@end

@implementation SimBlitEncoder
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value {
  _commandBuffer->_fills->push_back({_commandBuffer->_dispatches->size(), (SimBuffer *)[buffer retain], range, value});
}
- (void)endEncoding {
}
@end

@implementation SimCommandBuffer
- (id)init {
  if ((self = [super init])) {
    _fills = new std::vector<BlitFill>();
    _dispatches = new std::vector<Dispatch>();
    _residencySets = [[NSMutableArray alloc] init];
    _status = MTLCommandBufferStatusNotEnqueued;
  }
  return self;
}
- (void)dealloc {
  for (Dispatch &d : *_dispatches) releaseDispatch(d);
  delete _dispatches;
  for (BlitFill &f : *_fills) [f.buffer release];
  delete _fills;
  [_residencySets release];
  [_error release];
  [super dealloc];
}
- (MTLCommandBufferStatus)status {
  if (_status == MTLCommandBufferStatusCompleted && std::chrono::steady_clock::now() < _readyAt)
    return MTLCommandBufferStatusCommitted;
  return _status;
}
- (NSError *)error {
  return _error;
}
- (id<MTLComputeCommandEncoder>)computeCommandEncoder {
  SimComputeEncoder *encoder = [[SimComputeEncoder alloc] init];
  encoder->_commandBuffer = self;
  return [encoder autorelease];
}
- (id)blitCommandEncoder {
  SimBlitEncoder *encoder = [[SimBlitEncoder alloc] init];
  encoder->_commandBuffer = self;
  return [encoder autorelease];
}
- (void)useResidencySet:(id)residencySet {
  [_residencySets addObject:residencySet];
}
// Runs the fills encoded before dispatch `index`, in order; a range past the buffer's end fails the command buffer.
- (BOOL)runFillsBefore:(size_t)index from:(size_t *)next {
  for (; *next < _fills->size() && (*_fills)[*next].beforeDispatch <= index; (*next)++) {
    const BlitFill &f = (*_fills)[*next];
    if (f.range.location > f.buffer->_length || f.range.length > f.buffer->_length - f.range.location) {
      [self failWith:MTLCommandBufferErrorInvalidResource message:"a blit fill past the end of its buffer"];
      return NO;
    }
    memset(static_cast<uint8_t *>(f.buffer->_gpu) + f.range.location, f.value, f.range.length);
  }
  return YES;
}
- (void)failWith:(MTLCommandBufferError)code message:(const std::string &)message {
  _status = MTLCommandBufferStatusError;
  _error = [simError(MTLCommandBufferErrorDomain, code, "simulated: " + message) retain];
}
// The simulated GPU runs the whole command buffer at commit; a recorded hang leaves it committed for ever.
- (void)commit {
  if (_status != MTLCommandBufferStatusNotEnqueued) return;
  _status = MTLCommandBufferStatusCommitted;
  ComputeDevice &device = gCompute[_device];
  if (device.revoked.load()) {
    return [self failWith:MTLCommandBufferErrorAccessRevoked
                  message:"access to this device has been revoked after a command buffer that never completed"];
  }
  for (const Dispatch &d : *_dispatches) {
    SimPipeline *pipeline = (SimPipeline *)d.pipeline;
    if (pipeline == nil) continue;
    const ProbeFault &fault = faultOf(_device, pipeline->_kernel->probe);
    if (fault.behaviour == Behaviour::Raises) {
      [NSException raise:NSInternalInconsistencyException
                  format:@"simulated exception at commit, %s", recorded(fault).c_str()];
    }
    if (fault.behaviour == Behaviour::Aborts) {
      fprintf(stderr, "simulated Metal assertion at commit, %s\n", recorded(fault).c_str());
      abort();
    }
    if (fault.commitBlocks) {
      for (;;) pause();
    }
    if (fault.behaviour == Behaviour::GpuError) return [self failWith:fault.gpuError message:recorded(fault)];
    if (fault.behaviour == Behaviour::Hangs) {
      if (device.revokesAfterTimeout) device.revoked.store(true);
      return;
    }
  }
  size_t nextFill = 0;
  for (size_t i = 0; i < _dispatches->size(); i++) {
    const Dispatch &d = (*_dispatches)[i];
    if (![self runFillsBefore:i from:&nextFill]) return;
    SimPipeline *pipeline = (SimPipeline *)d.pipeline;
    if (pipeline == nil)
      return [self failWith:MTLCommandBufferErrorInvalidResource message:"a dispatch without a pipeline"];
    uint64_t threads = d.threads.width * d.threads.height * d.threads.depth;
    if (threads == 0 || threads > pipeline->_maxThreads) {
      return [self failWith:MTLCommandBufferErrorInvalidResource
                    message:std::to_string(threads) + " threads per threadgroup; the pipeline allows " +
                            std::to_string((unsigned long)pipeline->_maxThreads)];
    }
    const ProbeFault &fault = faultOf(_device, pipeline->_kernel->probe);
    if (fault.behaviour == Behaviour::Works && fault.threadgroupLimit > 0 &&
        d.threadgroupMemory[0] > fault.threadgroupLimit) {
      return [self failWith:MTLCommandBufferErrorInternal
                    message:std::to_string((unsigned long)d.threadgroupMemory[0]) +
                            " bytes of threadgroup memory exceed what this device accepts (" +
                            std::to_string(fault.threadgroupLimit) + " bytes, " + recorded(fault) + ")"];
    }
    if (fault.fault == "answered-limit") {
      // Asked of the device object, so an installed profile's answer is the one that counts.
      NSUInteger answered = [(id<MTLDevice>)gCompute[_device].object maxThreadgroupMemoryLength];
      if (d.threadgroupMemory[0] > answered) {
        return [self failWith:MTLCommandBufferErrorInternal
                      message:std::to_string((unsigned long)d.threadgroupMemory[0]) +
                              " bytes of threadgroup memory exceed the device's answer (maxThreadgroupMemoryLength " +
                              std::to_string((unsigned long)answered) + ", " + recorded(fault) + ")"];
      }
    }
    KernelRun run{d, fault, gCompute[_device].simdWidth, std::string()};
    pipeline->_kernel->run(run);
    if (!run.error.empty()) return [self failWith:MTLCommandBufferErrorPageFault message:run.error];
  }
  if (![self runFillsBefore:_dispatches->size() from:&nextFill]) return;
  _readyAt = std::chrono::steady_clock::now() + std::chrono::milliseconds(gCompute[_device].gpuMs);
  _status = MTLCommandBufferStatusCompleted;
}
@end

@interface SimCommandQueue : NSObject <MTLCommandQueue> {
 @public
  size_t _device;
}
@end

@implementation SimCommandQueue
- (id<MTLCommandBuffer>)commandBuffer {
  SimCommandBuffer *buffer = [[SimCommandBuffer alloc] init];
  buffer->_device = _device;
  return [buffer autorelease];
}
@end

// ---- the device's compute methods, added to each device class at run time ----

static id simNewCommandQueue(id self, SEL) {
  SimCommandQueue *queue = [[SimCommandQueue alloc] init];
  queue->_device = indexOfDevice(self);
  return queue;
}

static id simNewLibrary(id self, SEL, NSString *source, MTLCompileOptions *options, NSError **error) {
  size_t device = indexOfDevice(self);
  NSUInteger newest = maxLanguageFor(gCompute[device].osMajor);
  NSUInteger language = options != nil && [options languageVersion] != 0 ? [options languageVersion] : newest;
  std::vector<std::string> names = kernelNamesIn(source != nil ? [source UTF8String] : "");
  auto failWith = [&](MTLLibraryError code, const std::string &message) -> id {
    if (error != NULL) *error = simError(MTLLibraryErrorDomain, code, message);
    return nil;
  };
  if (language > newest) {
    return failWith(MTLLibraryErrorUnsupported, "simulated: MSL " + languageName(language) +
                                                    " is not available on macOS " +
                                                    std::to_string(gCompute[device].osMajor));
  }
  NSMutableArray *functionNames = [NSMutableArray array];
  for (const std::string &name : names) {
    if (const SimKernel *kernel = kernelNamed(name)) {
      const ProbeFault &fault = faultOf(device, kernel->probe);
      // Residency sets and heaps are unsupported where their own API is absent, not their kernels.
      if (fault.behaviour == Behaviour::Unsupported && kernel->probe != Probe::Residency &&
          kernel->probe != Probe::Heap) {
        return failWith(MTLLibraryErrorUnsupported, "simulated: MSL " + languageName(language) + " rejected for " +
                                                        name + " (" + recorded(fault) + ")");
      }
      if (language < kernel->minLanguage) {
        return failWith(MTLLibraryErrorCompileFailure, "program_source: error: " + name + " needs MSL " +
                                                           languageName(kernel->minLanguage) + ", compiled as MSL " +
                                                           languageName(language) + " (simulated)");
      }
    }
    [functionNames addObject:[NSString stringWithUTF8String:name.c_str()]];
  }
  SimLibrary *library = [[SimLibrary alloc] init];
  library->_names = [functionNames copy];
  library->_device = device;
  return library;
}

static id simNewPipeline(id self, SEL, id<MTLFunction> function, NSError **error) {
  SimFunction *f = (SimFunction *)function;
  const ProbeFault &fault = faultOf(f->_device, f->_kernel->probe);
  // nocopy-mmap, residency-set and heap fail where their own API is (the buffer, the set, the heap), not in the
  // pipeline.
  bool failsHere =
      f->_kernel->probe != Probe::Nocopy && f->_kernel->probe != Probe::Residency && f->_kernel->probe != Probe::Heap;
  if (fault.behaviour == Behaviour::Fail && failsHere) {
    if (error != NULL) {
      *error = simError(kSimErrorDomain, 2, "simulated pipeline failure, " + recorded(fault));
    }
    return nil;
  }
  SimPipeline *pipeline = [[SimPipeline alloc] init];
  pipeline->_kernel = f->_kernel;
  pipeline->_device = f->_device;
  pipeline->_maxThreads = std::min<NSUInteger>(1024, [(id<MTLDevice>)self maxThreadsPerThreadgroup].width);
  return pipeline;
}

// The asynchronous compile calls: the handler runs before the call returns (Metal runs it later, on a queue of its
// own; doctor waits for it either way). A recorded `compile` fault keeps the handler, uncalled, for ever.
static bool compileHangsFor(size_t device, NSString *source) {
  for (const std::string &name : kernelNamesIn(source != nil ? [source UTF8String] : "")) {
    const SimKernel *kernel = kernelNamed(name);
    if (kernel != nullptr && faultOf(device, kernel->probe).compileHangs) return true;
  }
  return false;
}

static void simNewLibraryAsync(id self, SEL, NSString *source, MTLCompileOptions *options,
                               MTLNewLibraryCompletionHandler handler) {
  if (compileHangsFor(indexOfDevice(self), source)) {
    static std::vector<void *> *pending = new std::vector<void *>();
    pending->push_back((void *)Block_copy(handler));
    return;
  }
  uint64_t compileMs = gCompute[indexOfDevice(self)].compileMs;
  if (compileMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(compileMs));
  NSError *error = nil;
  id library = simNewLibrary(self, @selector(newLibraryWithSource:options:error:), source, options, &error);
  handler(library, error);
  [library release];
}

static void simNewPipelineAsync(id self, SEL, id<MTLFunction> function,
                                MTLNewComputePipelineStateCompletionHandler handler) {
  NSError *error = nil;
  id pipeline = simNewPipeline(self, @selector(newComputePipelineStateWithFunction:error:), function, &error);
  handler(pipeline, error);
  [pipeline release];
}

static SimBuffer *simBuffer(id device, NSUInteger length) {
  SimBuffer *buffer = [[SimBuffer alloc] init];
  buffer->_length = buffer->_reported = length;
  buffer->_device = device;
  return buffer;
}

static id simNewBufferWithLength(id self, SEL, NSUInteger length, MTLResourceOptions) {
  if (length == 0) return nil;
  SimBuffer *buffer = simBuffer(self, length);
  buffer->_contents = buffer->_gpu = calloc(1, length);
  buffer->_ownsContents = YES;
  return buffer;
}

static id simNewBufferWithBytes(id self, SEL, const void *bytes, NSUInteger length, MTLResourceOptions) {
  if (length == 0) return nil;
  SimBuffer *buffer = simBuffer(self, length);
  buffer->_contents = buffer->_gpu = malloc(length);
  memcpy(buffer->_contents, bytes, length);
  buffer->_ownsContents = YES;
  return buffer;
}

static id simNewBufferNoCopy(id self, SEL, void *pointer, NSUInteger length, MTLResourceOptions,
                             MTLNewBufferDeallocator deallocator) {
  countInheritableDoctorFiles();
  const ProbeFault &fault = faultOf(indexOfDevice(self), Probe::Nocopy);
  if (fault.behaviour == Behaviour::Fail) return nil;
  // Apple requires a page-aligned pointer and a whole number of pages.
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  if (pointer == NULL || length == 0 || reinterpret_cast<uintptr_t>(pointer) % page != 0 || length % page != 0)
    return nil;
  countColdPages(pointer, length, page);
  SimBuffer *buffer = simBuffer(self, length);
  buffer->_contents = buffer->_gpu = pointer;
  if (deallocator != nil)
    buffer->_deallocator = Block_copy(deallocator);
  else
    gNoCopyWithoutDeallocator.fetch_add(1);
  bool faulty = fault.behaviour == Behaviour::WrongResult;
  if (faulty && fault.fault == "stale") {
    buffer->_gpu = malloc(length);
    memcpy(buffer->_gpu, pointer, length);
    buffer->_ownsGpuCopy = YES;
  }
  if (faulty && fault.fault == "zero-length") buffer->_reported = 0;
  return buffer;
}

static id simNewHeap(id self, SEL, MTLHeapDescriptor *descriptor) {
  const ProbeFault &fault = faultOf(indexOfDevice(self), Probe::Heap);
  if (fault.behaviour == Behaviour::Fail || descriptor == nil || [descriptor size] == 0) return nil;
  SimHeap *heap = [[SimHeap alloc] init];
  heap->_device = self;
  heap->_size = [descriptor size];
  return heap;
}

static id simNewResidencySet(id self, SEL, id descriptor, NSError **error) {
  const ProbeFault &fault = faultOf(indexOfDevice(self), Probe::Residency);
  if (fault.behaviour == Behaviour::Fail) {
    if (error != NULL) *error = simError(kSimErrorDomain, 1, "simulated residency-set failure, " + recorded(fault));
    return nil;
  }
  SimResidencySet *set = [[SimResidencySet alloc] init];
  set->_device = self;
  return set;
}

namespace {

// The recorded statuses lib/doctor/judge.ts names after a command-buffer code, back to the code.
MTLCommandBufferError gpuErrorOf(NSString *status) {
  if ([status isEqualToString:@"page-fault"]) return MTLCommandBufferErrorPageFault;
  if ([status isEqualToString:@"access-revoked"]) return MTLCommandBufferErrorAccessRevoked;
  if ([status isEqualToString:@"not-permitted"]) return MTLCommandBufferErrorNotPermitted;
  if ([status isEqualToString:@"out-of-memory"]) return MTLCommandBufferErrorOutOfMemory;
  if ([status isEqualToString:@"device-removed"]) return MTLCommandBufferErrorDeviceRemoved;
  return MTLCommandBufferErrorNone;
}

Behaviour behaviourOf(NSString *status) {
  if ([status isEqualToString:@"wrong-result"]) return Behaviour::WrongResult;
  if ([status isEqualToString:@"fail"]) return Behaviour::Fail;
  if ([status isEqualToString:@"unsupported"]) return Behaviour::Unsupported;
  if ([status isEqualToString:@"timeout"]) return Behaviour::Hangs;
  if ([status isEqualToString:@"error"]) return Behaviour::Raises;
  if ([status isEqualToString:@"aborted"]) return Behaviour::Aborts;
  if (gpuErrorOf(status) != MTLCommandBufferErrorNone) return Behaviour::GpuError;
  return Behaviour::Works;
}

template <typename T>
T *valueAt(NSDictionary *d, NSString *key, Class cls) {
  id v = [d objectForKey:key];
  return [v isKindOfClass:cls] ? (T *)v : nil;
}

std::string types(std::initializer_list<const char *> parts) {
  std::string out;
  for (const char *p : parts) out += p;
  return out;
}

}  // namespace

void simComputeReadDevice(size_t index, NSDictionary *device, const char *osVersion) {
  if (gCompute.capacity() < kSimMaxDeviceRecords) gCompute.reserve(kSimMaxDeviceRecords);
  if (gCompute.size() <= index) gCompute.resize(index + 1);
  ComputeDevice &compute = gCompute[index];
  compute.osMajor = osVersion != NULL ? atoi(osVersion) : 0;
  NSDictionary *doctor = valueAt<NSDictionary>(device, @"doctor", [NSDictionary class]);
  NSDictionary *probes = valueAt<NSDictionary>(doctor, @"probes", [NSDictionary class]);
  for (size_t p = 0; p < kProbeCount; p++) {
    NSDictionary *record =
        valueAt<NSDictionary>(probes, [NSString stringWithUTF8String:kProbeIds[p]], [NSDictionary class]);
    if (record == nil) continue;
    ProbeFault &fault = compute.probes[p];
    NSString *status = valueAt<NSString>(record, @"status", [NSString class]);
    fault.behaviour = behaviourOf(status);
    fault.gpuError = gpuErrorOf(status);
    NSString *detail = valueAt<NSString>(record, @"detail", [NSString class]);
    if (detail != nil) fault.detail = [detail UTF8String];
    // The largest size that worked: accepted (above 32768 bytes) where recorded, else proven.
    NSNumber *limit = valueAt<NSNumber>(record, @"acceptedThreadgroupMemory", [NSNumber class]);
    if (limit == nil) limit = valueAt<NSNumber>(record, @"provenThreadgroupMemory", [NSNumber class]);
    if (limit != nil) fault.threadgroupLimit = [limit unsignedLongLongValue];
    NSString *kind = valueAt<NSString>(record, @"fault", [NSString class]);
    if (kind != nil) fault.fault = [kind UTF8String];
    if (fault.fault == "compile") {
      fault.behaviour = Behaviour::Works;
      fault.compileHangs = true;
    }
    if (fault.fault == "commit") {
      fault.behaviour = Behaviour::Works;
      fault.commitBlocks = true;
    }
  }
  NSDictionary *simulation = valueAt<NSDictionary>(device, @"simulation", [NSDictionary class]);
  NSNumber *width = valueAt<NSNumber>(simulation, @"threadExecutionWidth", [NSNumber class]);
  if (width != nil && [width unsignedLongLongValue] > 0) compute.simdWidth = [width unsignedLongLongValue];
  NSNumber *compileMs = valueAt<NSNumber>(simulation, @"compileMs", [NSNumber class]);
  if (compileMs != nil) compute.compileMs = [compileMs unsignedLongLongValue];
  NSNumber *gpuMs = valueAt<NSNumber>(simulation, @"gpuMs", [NSNumber class]);
  if (gpuMs != nil) compute.gpuMs = [gpuMs unsignedLongLongValue];
  NSNumber *revokes = valueAt<NSNumber>(simulation, @"revokesAfterTimeout", [NSNumber class]);
  compute.revokesAfterTimeout = revokes != nil && [revokes boolValue];
}

extern "C" unsigned long MTLSimGetNoCopyAfterUnmap(void) {
  return gNoCopyAfterUnmap.load();
}

extern "C" unsigned long MTLSimGetNoCopyWithoutDeallocator(void) {
  return gNoCopyWithoutDeallocator.load();
}

extern "C" unsigned long MTLSimGetInheritableDoctorFiles(void) {
  return gInheritableDoctorFiles.load();
}

extern "C" unsigned long MTLSimGetNoCopyColdPages(void) {
  return gNoCopyColdPages.load();
}

namespace {

bool hasHeaps(size_t index) {
  return faultOf(index, Probe::Heap).behaviour != Behaviour::Unsupported;
}

// Residency sets exist from macOS 15, unless the snapshot records the API as missing.
bool hasResidencySets(size_t index) {
  int os = gCompute[index].osMajor;
  return (os == 0 || os >= 15) && faultOf(index, Probe::Residency).behaviour != Behaviour::Unsupported;
}

}  // namespace

bool simComputeResponds(size_t index, SEL sel) {
  if (index >= gCompute.size()) return true;
  const char *name = sel_getName(sel);
  if (strcmp(name, "newHeapWithDescriptor:") == 0) return hasHeaps(index);
  if (strcmp(name, "newResidencySetWithDescriptor:error:") == 0) return hasResidencySets(index);
  return true;
}

void simComputeForget(void) {
  gCompute.clear();
}

void simComputeAttachDevice(id device, size_t index) {
  if (gCompute.size() <= index) gCompute.resize(index + 1);
  gCompute[index].object = device;
  Class cls = object_getClass(device);
  const char *o = @encode(id), *s = @encode(SEL), *u = @encode(NSUInteger), *e = @encode(NSError **);
  class_addMethod(cls, @selector(newCommandQueue), (IMP)simNewCommandQueue, types({o, o, s}).c_str());
  class_addMethod(cls, @selector(newLibraryWithSource:options:error:), (IMP)simNewLibrary,
                  types({o, o, s, o, o, e}).c_str());
  class_addMethod(cls, @selector(newComputePipelineStateWithFunction:error:), (IMP)simNewPipeline,
                  types({o, o, s, o, e}).c_str());
  const char *v = @encode(void), *b = "@?";
  class_addMethod(cls, @selector(newLibraryWithSource:options:completionHandler:), (IMP)simNewLibraryAsync,
                  types({v, o, s, o, o, b}).c_str());
  class_addMethod(cls, @selector(newComputePipelineStateWithFunction:completionHandler:), (IMP)simNewPipelineAsync,
                  types({v, o, s, o, b}).c_str());
  class_addMethod(cls, @selector(newBufferWithLength:options:), (IMP)simNewBufferWithLength,
                  types({o, o, s, u, u}).c_str());
  class_addMethod(cls, @selector(newBufferWithBytes:length:options:), (IMP)simNewBufferWithBytes,
                  types({ o, o, s, @encode(const void *), u, u }).c_str());
  class_addMethod(cls, @selector(newBufferWithBytesNoCopy:length:options:deallocator:), (IMP)simNewBufferNoCopy,
                  types({ o, o, s, @encode(void *), u, u, o }).c_str());
  if (hasHeaps(index)) {
    class_addMethod(cls, @selector(newHeapWithDescriptor:), (IMP)simNewHeap, types({o, o, s, o}).c_str());
  }
  if (hasResidencySets(index)) {
    class_addMethod(cls, sel_registerName("newResidencySetWithDescriptor:error:"), (IMP)simNewResidencySet,
                    types({o, o, s, o, e}).c_str());
  }
}
