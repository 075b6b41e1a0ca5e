// doctor: real Metal work on one device, each probe judged against a CPU reference, returned as plain structs. No
// N-API here (addon_doctor.mm converts); no decisions beyond pass / wrong / fail (lib/doctor*.ts judges and derives
// profiles). Every probe runs under its own deadline, polls for completion (Metal's completion handlers are blocks,
// which the Linux build compiles with -fblocks and the blocks runtime; polling keeps every deadline in this thread) and
// installs nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcs {

enum class DoctorProbe {
  SimdgroupReduction,
  SimdgroupMatrix,
  Bfloat,
  ThreadgroupMemory,
  NocopyMmap,
  ResidencySet,
  Heap
};
enum class DoctorStatus { Pass, WrongResult, Fail, Unsupported, Timeout, Skipped, Error };

const char *doctorProbeId(DoctorProbe probe);
bool parseDoctorProbe(const std::string &id, DoctorProbe *out);
const char *doctorStatusName(DoctorStatus status);

// No Apple GPU has more threadgroup memory than this (lib/patch/profiles.ts APPLE_GPU_THREADGROUP_MEMORY, the same
// number; test/native/doctor.behaviours.test.ts holds the two together): the threadgroup-memory probe's ceiling where
// sizes above the stock limit may not be dispatched and the device reports no limit, and the largest size it can
// prove. Threadgroups larger than this may never share a GPU core, so no number of concurrent threadgroups shows that
// the memory exists: a larger size that computes right is only accepted.
inline constexpr uint64_t kAppleGpuThreadgroupMemory = 32768;

struct DoctorOptions {
  int device = 0;  // index in MTLCopyAllDevices() order; with an empty list, 0 is the default device
  std::vector<DoctorProbe> probes;
  // Always given by the caller: lib/doctor/probes.ts TIMEOUT_MS holds the default and the bounds.
  double timeoutMs = 0;
  std::vector<uint64_t> threadgroupSizes;  // ascending, bytes
  uint32_t threadgroupGroups = 1024;       // threadgroups dispatched at once for each size
  // The device's stock maxThreadgroupMemoryLength (read before any profile was applied), and whether sizes above it
  // may be dispatched at all (only in a VM: above the real limit it is undefined behaviour on real hardware).
  uint64_t stockThreadgroupMemory = 0;
  bool aboveStockThreadgroupMemory = false;
  // The largest size that can be proven (32768 on an Apple GPU; another GPU's own larger stock answer); a larger size
  // that works is only accepted.
  uint64_t provableThreadgroupMemory = kAppleGpuThreadgroupMemory;
  std::optional<std::string> mmapFile;  // opened read-only, never modified
  uint64_t mmapSize = 0;                // size of the generated file when there is no mmapFile
  std::string tempDir;
};

struct ProbeOutcome {
  DoctorProbe id = DoctorProbe::SimdgroupReduction;
  DoctorStatus status = DoctorStatus::Error;
  std::string detail;  // one line
  double ms = 0;
  double compileMs = 0;  // Metal's compiler: libraries and pipelines, under their own deadline
  // The status comes from compiling the kernel or creating its pipeline, or from creating the residency set: the
  // feature's object could not be made at all.
  bool buildFailed = false;
  // A command buffer ended in MTLCommandBufferErrorDomain with this code (MTLCommandBufferError), or the GPU did not
  // finish a dispatch before the deadline: lib/doctor/judge.ts names the status after the code, and a timeout,
  // AccessRevoked or NotPermitted leaves the device's later probes skipped.
  std::optional<int64_t> commandBufferError;
  bool gpuTimedOut = false;
  std::optional<uint64_t> provenThreadgroupMemory;
  // threadgroup-memory: the largest size above kAppleGpuThreadgroupMemory that ran and computed right (unverifiable).
  std::optional<uint64_t> acceptedThreadgroupMemory;
  std::optional<uint64_t> failedThreadgroupMemory;
  std::optional<uint64_t> bufferLength;
  std::optional<double> maxAbsError;
};

struct DoctorDevice {
  int index = 0;
  std::string name;
  std::string className;
  std::optional<uint64_t> registryId;
};

struct DoctorResult {
  bool ok = false;
  std::string errorCode;  // ERR_NO_DEVICE when !ok
  std::string message;
  DoctorDevice device;
  std::vector<ProbeOutcome> outcomes;
};

DoctorResult runDoctor(const DoctorOptions &options);

}  // namespace mcs
