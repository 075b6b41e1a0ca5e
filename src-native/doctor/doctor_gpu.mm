#include "doctor_gpu.h"

#include <objc/runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace mcs {

namespace {

std::chrono::microseconds span(double ms) {
  return std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0));
}

// What an asynchronous Metal call hands back, shared by the caller and the completion handler: whichever lets go
// last frees it, so a handler that runs after the caller gave up (a compiler past its deadline) is harmless.
struct Pending {
  std::atomic<int> holders{2};
  std::atomic<bool> done{false};
  id result = nil;       // +1
  NSError *error = nil;  // +1
};

void letGo(Pending *p) {
  if (p->holders.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    [p->result release];
    [p->error release];
    delete p;
  }
}

void finish(Pending *p, id result, NSError *error) {
  p->result = [result retain];
  p->error = [error retain];
  p->done.store(true, std::memory_order_release);
  letGo(p);
}

// Polls until the handler ran or the deadline passed; true when it ran.
bool awaitPending(const Pending *p, const Deadline &deadline) {
  auto pause = std::chrono::microseconds(50);
  while (!p->done.load(std::memory_order_acquire)) {
    if (deadline.passed()) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  return true;
}

// The outcome of one asynchronous call: what it made (+1, nil on failure), Metal's error, or that it ran late.
struct Made {
  id object = nil;
  NSError *error = nil;  // autoreleased
  bool late = false;
};

Made collect(Pending *pending, const Deadline &deadline) {
  Made made;
  if (!awaitPending(pending, deadline)) {
    made.late = true;
  } else {
    made.object = [pending->result retain];
    made.error = [[pending->error retain] autorelease];
  }
  letGo(pending);
  return made;
}

// The probes compare against exact CPU references; fast math may reassociate or flush. setFastMathEnabled: is
// deprecated in the macOS 15 SDK for setMathMode: (MTLMathModeSafe, 0), which the macOS 12 SDK lacks: called through
// its implementation where the options answer it, on both runtimes.
void setSafeMath(MTLCompileOptions *options) {
  SEL setMathMode = sel_registerName("setMathMode:");
  if ([(id)options respondsToSelector:setMathMode]) {
    constexpr NSInteger kMathModeSafe = 0;
    using SetFn = void (*)(id, SEL, NSInteger);
    reinterpret_cast<SetFn>(class_getMethodImplementation(object_getClass((id)options), setMathMode))(
        (id)options, setMathMode, kMathModeSafe);
    return;
  }
  [options setFastMathEnabled:NO];
}

std::string lateCompile(const std::string &what, const Deadline &deadline) {
  return what + " did not finish within " + std::to_string((long)deadline.budgetMs()) +
         " ms: Metal's compiler, not the GPU, ran out of time";
}

}  // namespace

Deadline::Deadline(double budgetMs)
    : start_(std::chrono::steady_clock::now()), end_(start_ + span(budgetMs)), budgetMs_(budgetMs) {}

void Deadline::restart() {
  end_ = std::chrono::steady_clock::now() + span(budgetMs_);
}

bool Deadline::passed() const {
  return std::chrono::steady_clock::now() >= end_;
}

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
  const char *utf8 = text != nil ? [text UTF8String] : nullptr;
  std::string out = utf8 != nullptr ? std::string(utf8) : std::string();
  if (out.empty()) {
    const char *domain = [error domain] != nil ? [[error domain] UTF8String] : nullptr;
    out = std::string(domain != nullptr ? domain : "an error") + " " + std::to_string((long)[error code]);
  }
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

std::string formatBytes(uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

const Pipeline *buildPipelines(ProbeContext &ctx, std::initializer_list<PipelineOf> kernels) {
  id<MTLDevice> device = ctx.device;
  const DoctorKernel &first = kernels.begin()->kernel;
  Pipeline *firstOut = kernels.begin()->out;
  std::string firstFunction = first.function;
  Deadline compile(ctx.options.timeoutMs);
  struct Tally {
    ProbeContext &ctx;
    const Deadline &compile;
    ~Tally() { ctx.compileMs += compile.elapsedMs(); }
  } tally{ctx, compile};
  Owned<MTLCompileOptions *> options([MTLCompileOptions new]);
  Pending *library = new Pending();
  @try {
    // Inside the @try: Metal may raise for a language version newer than the OS, as it may at the compile.
    [options.get() setLanguageVersion:(MTLLanguageVersion)first.languageVersion];
    setSafeMath(options.get());
    [device newLibraryWithSource:[NSString stringWithUTF8String:first.source]
                         options:options.get()
               completionHandler:^(id<MTLLibrary> made, NSError *error) {
                 finish(library, made, error);
               }];
  } @catch (id exception) {
    // Apple's Metal may raise instead of returning an error for options it does not know, such as a language version
    // newer than the OS; for the 2.3 kernels that cannot be the reason. Whether the handler will still run is not
    // known, so its share of `library` is left to it.
    letGo(library);
    firstOut->status = first.languageVersion > kMsl2_3 ? DoctorStatus::Unsupported : DoctorStatus::Fail;
    firstOut->detail = "Metal refused to compile " + firstFunction + ": " + exceptionText(exception);
    return firstOut;
  }
  Made compiled = collect(library, compile);
  Owned<id<MTLLibrary>> made((id<MTLLibrary>)compiled.object);
  if (compiled.late) {
    firstOut->status = DoctorStatus::Timeout;
    firstOut->detail = lateCompile("compiling " + firstFunction, compile);
    return firstOut;
  }
  if (!made) {
    NSError *error = compiled.error;
    bool rejectedVersion = error != nil && [[error domain] isEqualToString:MTLLibraryErrorDomain] &&
                           [error code] == MTLLibraryErrorUnsupported;
    firstOut->status = rejectedVersion ? DoctorStatus::Unsupported : DoctorStatus::Fail;
    firstOut->detail = "compiling " + firstFunction + " failed: " + errorText(error);
    return firstOut;
  }
  for (const PipelineOf &entry : kernels) {
    Pipeline *out = entry.out;
    std::string function = entry.kernel.function;
    Owned<id<MTLFunction>> fn([made.get() newFunctionWithName:[NSString stringWithUTF8String:entry.kernel.function]]);
    if (!fn) {
      out->status = DoctorStatus::Fail;
      out->detail = "the compiled library has no function " + function;
      return out;
    }
    Pending *pipeline = new Pending();
    [device newComputePipelineStateWithFunction:fn.get()
                              completionHandler:^(id<MTLComputePipelineState> state, NSError *error) {
                                finish(pipeline, state, error);
                              }];
    Made built = collect(pipeline, compile);
    out->state.reset((id<MTLComputePipelineState>)built.object);
    if (built.late) {
      out->status = DoctorStatus::Timeout;
      out->detail = lateCompile("creating the pipeline for " + function, compile);
      return out;
    }
    if (!out->state) {
      out->status = DoctorStatus::Fail;
      out->detail = "creating the pipeline for " + function + " failed: " + errorText(built.error);
      return out;
    }
    out->status = DoctorStatus::Pass;
  }
  // The GPU's budget starts once its work can start.
  ctx.deadline.restart();
  return nullptr;
}

bool buildPipeline(ProbeContext &ctx, const DoctorKernel &kernel, Pipeline *out) {
  return buildPipelines(ctx, {{kernel, out}}) == nullptr;
}

ProbeOutcome unbuilt(DoctorProbe probe, const Pipeline &pipeline) {
  ProbeOutcome outcome = makeOutcome(probe, pipeline.status, pipeline.detail);
  outcome.buildFailed = pipeline.status == DoctorStatus::Fail || pipeline.status == DoctorStatus::Unsupported;
  return outcome;
}

bool leavesGpuUnusable(int64_t code) {
  return code == MTLCommandBufferErrorTimeout || code == MTLCommandBufferErrorAccessRevoked ||
         code == MTLCommandBufferErrorNotPermitted;
}

Completion commitAndWait(id<MTLCommandBuffer> commandBuffer, const Deadline &deadline, GpuFailure *failure) {
  [commandBuffer commit];
  // Short sleeps that grow to 2 ms: small probes finish in well under a millisecond, a hung one costs nothing.
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    MTLCommandBufferStatus status = [commandBuffer status];
    if (status == MTLCommandBufferStatusCompleted) return Completion::Completed;
    if (status == MTLCommandBufferStatusError) {
      NSError *error = [commandBuffer error];
      failure->text = errorText(error);
      if (error != nil && [[error domain] isEqualToString:MTLCommandBufferErrorDomain])
        failure->code = static_cast<int64_t>([error code]);
      return Completion::Failed;
    }
    if (deadline.passed()) return Completion::TimedOut;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

namespace {

Completion dispatchOnce(id<MTLCommandQueue> queue, const DispatchSpec &spec, const Deadline &deadline,
                        GpuFailure *failure) {
  id<MTLCommandBuffer> commandBuffer = [queue commandBuffer];
  if (commandBuffer == nil) {
    failure->text = "the command queue gave no command buffer";
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
    failure->text = "the command buffer gave no compute encoder";
    return Completion::Failed;
  }
  [encoder setComputePipelineState:spec.pipeline];
  for (NSUInteger i = 0; i < spec.buffers.size(); i++) [encoder setBuffer:spec.buffers[i] offset:0 atIndex:i];
  if (spec.threadgroupMemory > 0) [encoder setThreadgroupMemoryLength:spec.threadgroupMemory atIndex:0];
  [encoder dispatchThreadgroups:spec.threadgroups threadsPerThreadgroup:spec.threadsPerThreadgroup];
  [encoder endEncoding];
  return commitAndWait(commandBuffer, deadline, failure);
}

}  // namespace

Completion dispatch(id<MTLCommandQueue> queue, const DispatchSpec &spec, const Deadline &deadline,
                    GpuFailure *failure) {
  // The command buffer and the encoder are autoreleased and retain what they bind; drained here, they let go of the
  // buffers before the probe releases them (a NoCopy buffer must be gone before its mapping is). Not a scoped pool:
  // an exception Metal raises must not drain it on the way out, since the exception object lives in it.
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  Completion done = dispatchOnce(queue, spec, deadline, failure);
  [pool release];
  return done;
}

ProbeOutcome incomplete(DoctorProbe probe, Completion completion, const GpuFailure &failure, const Deadline &deadline,
                        const std::string &what) {
  if (completion == Completion::TimedOut) {
    ProbeOutcome outcome =
        makeOutcome(probe, DoctorStatus::Timeout,
                    what + " did not complete within " + std::to_string((long)deadline.budgetMs()) + " ms");
    outcome.gpuTimedOut = true;
    return outcome;
  }
  ProbeOutcome outcome = makeOutcome(probe, DoctorStatus::Fail, what + " failed: " + failure.text);
  if (failure.code != 0) outcome.commandBufferError = failure.code;
  return outcome;
}

NSUInteger maxThreads(id<MTLComputePipelineState> pipeline) {
  return [pipeline maxTotalThreadsPerThreadgroup];
}

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

void makeWordBuffers(id<MTLDevice> device, uint32_t words, uint32_t multiplier, uint32_t increment,
                     WordBuffers *buffers) {
  buffers->seeds.resize(words);
  for (uint32_t i = 0; i < words; i++) buffers->seeds[i] = i * multiplier + increment;
  buffers->in.reset(newSharedBuffer(device, buffers->seeds.data(), words * sizeof(uint32_t)));
  buffers->out.reset(newSharedBuffer(device, nullptr, words * sizeof(uint32_t)));
  buffers->queue.reset([device newCommandQueue]);
}

}  // namespace mcs
