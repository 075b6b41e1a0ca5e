#include "doctor_gpu.h"

#include <objc/runtime.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace mcs {

namespace {

std::chrono::microseconds span(double ms) { return std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0)); }

}  // namespace

Deadline::Deadline(double budgetMs) : start_(std::chrono::steady_clock::now()), end_(start_ + span(budgetMs)), budgetMs_(budgetMs) {}

void Deadline::restart() { end_ = std::chrono::steady_clock::now() + span(budgetMs_); }

bool Deadline::passed() const { return std::chrono::steady_clock::now() >= end_; }

double Deadline::elapsedMs() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
}

ProbeOutcome makeOutcome(DoctorProbe probe, DoctorStatus status, const std::string &detail) {
  ProbeOutcome outcome;
  outcome.id = probe;
  outcome.status = status;
  outcome.detail = oneLine(detail);
  return outcome;
}

std::string oneLine(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    bool blank = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (blank) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  // Compiler logs can run to pages; the first few hundred characters name the problem.
  constexpr size_t kMax = 400;
  if (out.size() > kMax) out = out.substr(0, kMax - 3) + "...";
  return out;
}

std::string errorText(NSError *error) {
  if (error == nil) return "no error text";
  NSString *text = [error localizedDescription];
  std::string out = text != nil ? std::string([text UTF8String]) : std::string();
  if (out.empty()) out = std::string([[error domain] UTF8String]) + " " + std::to_string((long)[error code]);
  return oneLine(out);
}

std::string exceptionText(id exception) {
  // Asked by selector: naming the NSException class would link CoreFoundation, like a typed @catch.
  if (![exception respondsToSelector:@selector(name)] || ![exception respondsToSelector:@selector(reason)]) {
    return "an exception that is not an NSException";
  }
  NSString *name = [(NSException *)exception name], *reason = [(NSException *)exception reason];
  const char *n = name != nil ? [name UTF8String] : nullptr, *r = reason != nil ? [reason UTF8String] : nullptr;
  return oneLine(std::string(n != nullptr ? n : "NSException") + ": " + (r != nullptr ? r : "no reason given"));
}

std::string formatBytes(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

bool buildPipeline(id<MTLDevice> device, const DoctorKernel &kernel, Pipeline *out) {
  std::string function = kernel.function;
  Owned<MTLCompileOptions *> options([MTLCompileOptions new]);
  [options.get() setLanguageVersion:(MTLLanguageVersion)kernel.languageVersion];
  // The probes compare against exact CPU references; fast math may reassociate or flush.
  [options.get() setFastMathEnabled:NO];
  NSError *error = nil;
  Owned<id<MTLLibrary>> library;
  @try {
    library.reset([device newLibraryWithSource:[NSString stringWithUTF8String:kernel.source]
                                        options:options.get()
                                          error:&error]);
  } @catch (id exception) {
    // Apple's Metal may raise instead of returning an error for options it does not know, such as a language version
    // newer than the OS; for the 2.3 kernels that cannot be the reason.
    out->status = kernel.languageVersion > kMsl2_3 ? DoctorStatus::Unsupported : DoctorStatus::Fail;
    out->detail = "Metal refused to compile " + function + ": " + exceptionText(exception);
    return false;
  }
  if (!library) {
    bool rejectedVersion = error != nil && [[error domain] isEqualToString:MTLLibraryErrorDomain] &&
                           [error code] == MTLLibraryErrorUnsupported;
    out->status = rejectedVersion ? DoctorStatus::Unsupported : DoctorStatus::Fail;
    out->detail = "compiling " + function + " failed: " + errorText(error);
    return false;
  }
  Owned<id<MTLFunction>> fn([library.get() newFunctionWithName:[NSString stringWithUTF8String:kernel.function]]);
  if (!fn) {
    out->status = DoctorStatus::Fail;
    out->detail = "the compiled library has no function " + function;
    return false;
  }
  error = nil;
  out->state.reset([device newComputePipelineStateWithFunction:fn.get() error:&error]);
  if (!out->state) {
    out->status = DoctorStatus::Fail;
    out->detail = "creating the pipeline for " + function + " failed: " + errorText(error);
    return false;
  }
  out->status = DoctorStatus::Pass;
  return true;
}

Completion commitAndWait(id<MTLCommandBuffer> commandBuffer, const Deadline &deadline, std::string *error) {
  [commandBuffer commit];
  // Short sleeps that grow to 2 ms: small probes finish in well under a millisecond, a hung one costs nothing.
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    MTLCommandBufferStatus status = [commandBuffer status];
    if (status == MTLCommandBufferStatusCompleted) return Completion::Completed;
    if (status == MTLCommandBufferStatusError) {
      *error = errorText([commandBuffer error]);
      return Completion::Failed;
    }
    if (deadline.passed()) return Completion::TimedOut;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

Completion dispatch(id<MTLCommandQueue> queue, const DispatchSpec &spec, const Deadline &deadline, std::string *error) {
  id<MTLCommandBuffer> commandBuffer = [queue commandBuffer];
  if (commandBuffer == nil) {
    *error = "the command queue gave no command buffer";
    return Completion::Failed;
  }
  SEL useResidencySet = sel_registerName("useResidencySet:");
  if (spec.residencySet != nil && [(id)commandBuffer respondsToSelector:useResidencySet]) {
    // macOS 15 API, absent from the macOS 12 SDK: called through its implementation, which works on both runtimes.
    using UseFn = void (*)(id, SEL, id);
    reinterpret_cast<UseFn>(class_getMethodImplementation(object_getClass((id)commandBuffer), useResidencySet))(
        (id)commandBuffer, useResidencySet, spec.residencySet);
  }
  id<MTLComputeCommandEncoder> encoder = [commandBuffer computeCommandEncoder];
  if (encoder == nil) {
    *error = "the command buffer gave no compute encoder";
    return Completion::Failed;
  }
  [encoder setComputePipelineState:spec.pipeline];
  for (NSUInteger i = 0; i < spec.buffers.size(); i++) [encoder setBuffer:spec.buffers[i] offset:0 atIndex:i];
  if (spec.threadgroupMemory > 0) [encoder setThreadgroupMemoryLength:spec.threadgroupMemory atIndex:0];
  [encoder dispatchThreadgroups:spec.threadgroups threadsPerThreadgroup:spec.threadsPerThreadgroup];
  [encoder endEncoding];
  return commitAndWait(commandBuffer, deadline, error);
}

ProbeOutcome incomplete(DoctorProbe probe, Completion completion, const std::string &error, const Deadline &deadline,
                        const std::string &what) {
  if (completion == Completion::TimedOut) {
    return makeOutcome(probe, DoctorStatus::Timeout,
                       what + " did not complete within " + std::to_string((long)deadline.budgetMs()) + " ms");
  }
  return makeOutcome(probe, DoctorStatus::Fail, what + " failed: " + error);
}

NSUInteger maxThreads(id<MTLComputePipelineState> pipeline) { return [pipeline maxTotalThreadsPerThreadgroup]; }

ProbeOutcome tooFewThreads(DoctorProbe probe, id<MTLComputePipelineState> pipeline, NSUInteger needed) {
  return makeOutcome(probe, DoctorStatus::Fail,
                     "the pipeline allows " + std::to_string((unsigned long)maxThreads(pipeline)) +
                         " threads per threadgroup; the probe needs " + std::to_string((unsigned long)needed));
}

id<MTLBuffer> newSharedBuffer(id<MTLDevice> device, const void *bytes, size_t length) {
  id<MTLBuffer> buffer = [device newBufferWithLength:length options:MTLResourceStorageModeShared];
  if (buffer == nil) return nil;
  if (bytes != nullptr) {
    memcpy([buffer contents], bytes, length);
  } else {
    memset([buffer contents], 0, length);
  }
  return buffer;
}

}  // namespace mcs
