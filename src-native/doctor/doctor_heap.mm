// heap: the allocation path MLX takes for small buffers on a real Mac. MLX creates one 1 MiB MTLHeap with shared
// storage and untracked hazards and places buffers under 256 bytes in it, except when the device is named exactly
// "Apple Paravirtual device" (mlx/backend/metal/allocator.cpp, PR 1911). A profile that answers the host chip's name
// turns that path on in a guest, so doctor tests it the same way: a heap of that shape, a buffer placed in it, one
// dispatch writing it and one reading it back, both compared with the CPU, which also reads the placed buffer.
#include "doctor_probes.h"

#include <cstring>
#include <vector>

namespace mcs {
namespace {

constexpr NSUInteger kHeapBytes = 1 << 20;
constexpr uint32_t kWords = 256;
constexpr NSUInteger kGroup = 64;
constexpr MTLResourceOptions kHeapOptions = MTLResourceStorageModeShared | MTLResourceHazardTrackingModeUntracked;

uint32_t written(uint32_t seed) {
  return seed * 2654435761u + 40503u;
}
uint32_t readBack(uint32_t seed) {
  return written(seed) ^ 2654435769u;
}

}  // namespace

ProbeOutcome runHeap(ProbeContext &ctx) {
  const DoctorProbe probe = DoctorProbe::Heap;
  if (![(id)ctx.device respondsToSelector:@selector(newHeapWithDescriptor:)]) {
    return makeOutcome(probe, DoctorStatus::Unsupported, "this device has no heaps (newHeapWithDescriptor:)");
  }
  Pipeline writer, reader;
  if (const Pipeline *failed = buildPipelines(ctx, {{kHeapWriteKernel, &writer}, {kHeapReadKernel, &reader}}))
    return unbuilt(probe, *failed);
  for (Pipeline *p : {&writer, &reader}) {
    if (maxThreads(p->state.get()) < kGroup) return tooFewThreads(probe, p->state.get(), kGroup);
  }
  Owned<MTLHeapDescriptor *> descriptor([MTLHeapDescriptor new]);
  [descriptor.get() setSize:kHeapBytes];
  [descriptor.get() setResourceOptions:kHeapOptions];
  Owned<id<MTLHeap>> heap([ctx.device newHeapWithDescriptor:descriptor.get()]);
  if (!heap)
    return makeOutcome(probe, DoctorStatus::Fail, "newHeapWithDescriptor: gave no heap of " + formatBytes(kHeapBytes));
  Owned<id<MTLBuffer>> placed([heap.get() newBufferWithLength:kWords * sizeof(uint32_t) options:kHeapOptions]);
  if (!placed)
    return makeOutcome(probe, DoctorStatus::Fail,
                       "the heap gave no buffer of " + formatBytes(kWords * sizeof(uint32_t)));
  if ([placed.get() heap] != heap.get()) {
    return makeOutcome(probe, DoctorStatus::WrongResult,
                       "the buffer the heap gave does not report that heap as its own");
  }
  WordBuffers words;
  makeWordBuffers(ctx.device, kWords, 747796405u, 2891336453u, &words);
  if (!words.ok()) return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no buffer or queue");
  memset([placed.get() contents], 0, kWords * sizeof(uint32_t));

  // Two command buffers on one queue run in order: the read needs no fence on the untracked heap.
  DispatchSpec write, read;
  write.pipeline = writer.state.get();
  write.buffers = {words.in.get(), placed.get()};
  read.pipeline = reader.state.get();
  read.buffers = {placed.get(), words.out.get()};
  for (DispatchSpec *spec : {&write, &read}) {
    spec->threadgroups = MTLSizeMake(kWords / kGroup, 1, 1);
    spec->threadsPerThreadgroup = MTLSizeMake(kGroup, 1, 1);
  }
  for (const DispatchSpec *spec : {&write, &read}) {
    GpuFailure error;
    Completion done = dispatch(words.queue.get(), *spec, ctx.deadline, &error);
    if (done == Completion::Completed) continue;
    // A command buffer that never completed may still use the heap's memory: it is left to Metal.
    if (done == Completion::TimedOut) heap.abandon();
    return incomplete(probe, done, error, ctx.deadline,
                      spec == &write ? "the dispatch writing the placed buffer" : "the dispatch reading it back");
  }
  const uint32_t *inHeap = static_cast<const uint32_t *>([placed.get() contents]);
  const uint32_t *gotBack = static_cast<const uint32_t *>([words.out.get() contents]);
  uint32_t wrongWritten = 0, wrongRead = 0;
  for (uint32_t i = 0; i < kWords; i++) {
    wrongWritten += inHeap[i] != written(words.seeds[i]) ? 1 : 0;
    wrongRead += gotBack[i] != readBack(words.seeds[i]) ? 1 : 0;
  }
  if (wrongWritten + wrongRead > 0) {
    return makeOutcome(probe, DoctorStatus::WrongResult,
                       std::to_string(wrongWritten) + " of " + std::to_string(kWords) +
                           " words of the placed buffer differ from what the GPU was to write, and " +
                           std::to_string(wrongRead) + " read back wrong");
  }
  return makeOutcome(probe, DoctorStatus::Pass,
                     "a " + formatBytes(kHeapBytes) + " heap (shared, untracked, as MLX makes it) held a " +
                         formatBytes(kWords * sizeof(uint32_t)) +
                         " buffer that a dispatch wrote and another read back, as the CPU computes");
}

}  // namespace mcs
