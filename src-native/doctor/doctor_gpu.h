// The doctor's small Metal harness: ownership of retained objects, deadlines, kernel compilation and command-buffer
// completion by polling. Public Metal API only, so the Linux test build runs the same code against test/sim-metal.
#pragma once

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <chrono>
#include <initializer_list>
#include <string>
#include <vector>

#include "doctor.h"
#include "doctor_kernels.h"

namespace mcs {

// Manual retain/release (the Linux build has no ARC): holds one +1 reference and releases it at scope exit.
template <typename T>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T object) : object_(object) {}
  ~Owned() { [object_ release]; }
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  void reset(T object) {
    [object_ release];
    object_ = object;
  }
  T get() const { return object_; }
  // Gives up ownership without releasing (a command buffer that never completed may still read the object).
  T abandon() {
    T object = object_;
    object_ = nil;
    return object;
  }
  explicit operator bool() const { return object_ != nil; }

 private:
  T object_ = nil;
};

class ScopedAutoreleasePool {
 public:
  ScopedAutoreleasePool() : pool_([NSAutoreleasePool new]) {}
  ~ScopedAutoreleasePool() { [pool_ release]; }
  ScopedAutoreleasePool(const ScopedAutoreleasePool &) = delete;
  ScopedAutoreleasePool &operator=(const ScopedAutoreleasePool &) = delete;

 private:
  NSAutoreleasePool *pool_;
};

class Deadline {
 public:
  explicit Deadline(double budgetMs);
  bool passed() const;
  double elapsedMs() const;
  double budgetMs() const { return budgetMs_; }
  // The whole budget again from now; elapsedMs() still counts from the start. For work before the GPU's, which
  // is not the device's to answer for (nocopy-mmap writing its file).
  void restart();

 private:
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point end_;
  double budgetMs_;
};

// What every runner gets: the device, the options, its own deadline (the GPU's; compiling has its own) and the host's
// macOS major version (0: unknown). compileMs adds up the time Metal's compiler took for this probe.
struct ProbeContext {
  id<MTLDevice> device;
  const DoctorOptions &options;
  Deadline deadline;
  int osMajor;
  double compileMs = 0;
};

ProbeOutcome makeOutcome(DoctorProbe probe, DoctorStatus status, const std::string &detail);

// A compiled kernel's pipeline, or why there is none: `fail` (compile or pipeline error, with Metal's text),
// `unsupported` (Metal rejected the language version) or `timeout` (the compiler did not finish in time).
struct Pipeline {
  Owned<id<MTLComputePipelineState>> state;
  DoctorStatus status = DoctorStatus::Error;
  std::string detail;
};
// Compiles with Metal's asynchronous calls under a deadline of its own (the probe's budget), so a hung compiler
// never holds the caller, and its time is not the GPU's: the GPU deadline starts again once the pipeline exists.
bool buildPipeline(ProbeContext &ctx, const DoctorKernel &kernel, Pipeline *out);
// One kernel's function and where its pipeline goes.
struct PipelineOf {
  const DoctorKernel &kernel;
  Pipeline *out;
};
// Several functions of one MSL source (doctor_kernels.h checks that they share it): the source is compiled once, under
// one deadline for the library and every pipeline, and each function gets its pipeline from that library. Returns the
// pipeline that could not be built (a failed compile is the first's), or nullptr when every one was.
const Pipeline *buildPipelines(ProbeContext &ctx, std::initializer_list<PipelineOf> kernels);
// The outcome for a kernel that could not be built (marked as such for the judging in TypeScript).
ProbeOutcome unbuilt(DoctorProbe probe, const Pipeline &pipeline);

NSUInteger maxThreads(id<MTLComputePipelineState> pipeline);
ProbeOutcome tooFewThreads(DoctorProbe probe, id<MTLComputePipelineState> pipeline, NSUInteger needed);

enum class Completion { Completed, Failed, TimedOut };

// Why a command buffer failed: Metal's text, and its MTLCommandBufferError code when the error is in
// MTLCommandBufferErrorDomain (read by domain and code, never from the text; 0: another domain or no error object).
struct GpuFailure {
  std::string text;
  int64_t code = 0;
};
// The codes after which a device takes no more work from this process (Timeout; AccessRevoked: "too many timeouts or
// hangs"; NotPermitted): a probe that meets one is the last on its device (lib/doctor/judge.ts).
bool leavesGpuUnusable(int64_t code);

// Commits `commandBuffer` and polls its status until it completes, fails (`failure` gets Metal's text and code) or the
// deadline passes. A command buffer that never completes is left to Metal, which keeps its own reference while it is
// pending.
Completion commitAndWait(id<MTLCommandBuffer> commandBuffer, const Deadline &deadline, GpuFailure *failure);

// dispatch() releases its command buffer and encoder before it returns (they retain the buffers they bind): nothing
// it made outlives the call unless the GPU is still working on it.

// One compute dispatch in its own command buffer: buffers bound at indices 0, 1, …, optional threadgroup memory at
// threadgroup index 0, and optionally a residency set (macOS 15) the command buffer uses.
struct DispatchSpec {
  id<MTLComputePipelineState> pipeline = nil;
  std::vector<id<MTLBuffer>> buffers;
  MTLSize threadgroups = {1, 1, 1};
  MTLSize threadsPerThreadgroup = {1, 1, 1};
  NSUInteger threadgroupMemory = 0;
  id residencySet = nil;
};
Completion dispatch(id<MTLCommandQueue> queue, const DispatchSpec &spec, const Deadline &deadline, GpuFailure *failure);

// The outcome for a dispatch that did not complete: `timeout` (gpuTimedOut), or `fail` with Metal's error text and
// its command-buffer code.
ProbeOutcome incomplete(DoctorProbe probe, Completion completion, const GpuFailure &failure, const Deadline &deadline,
                        const std::string &what);

// A shared-storage buffer holding a copy of `bytes` (zero-filled when `bytes` is null); +1, nil on failure.
id<MTLBuffer> newSharedBuffer(id<MTLDevice> device, const void *bytes, size_t length);

// What a probe that passes words through a kernel runs on: `seeds` (word i is i * multiplier + increment, modulo
// 2^32), `in` a shared buffer holding them, `out` as many zeroed words, and a queue. ok() is false when Metal gave
// one of the three not.
struct WordBuffers {
  std::vector<uint32_t> seeds;
  Owned<id<MTLBuffer>> in;
  Owned<id<MTLBuffer>> out;
  Owned<id<MTLCommandQueue>> queue;
  bool ok() const { return in && out && queue; }
};
void makeWordBuffers(id<MTLDevice> device, uint32_t words, uint32_t multiplier, uint32_t increment,
                     WordBuffers *buffers);

std::string oneLine(const std::string &text);
std::string errorText(NSError *error);
// Caught as `id`: a typed @catch (NSException *) needs CoreFoundation's exception type, which the addon does not
// link (Foundation alone does not re-export it).
std::string exceptionText(id exception);
std::string formatBytes(uint64_t bytes);

}  // namespace mcs
