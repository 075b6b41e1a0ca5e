#include "doctor.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <objc/runtime.h>

#include <cstdlib>

#include "../engine/capabilities.h"
#include "doctor_probes.h"
#include "../platform/host.h"

namespace mcs {
namespace {

struct ProbeName {
  DoctorProbe probe;
  const char *id;
};

const ProbeName kProbeNames[] = {
    {DoctorProbe::SimdgroupReduction, "simdgroup-reduction"},
    {DoctorProbe::SimdgroupMatrix, "simdgroup-matrix"},
    {DoctorProbe::Bfloat, "bfloat"},
    {DoctorProbe::ThreadgroupMemory, "threadgroup-memory"},
    {DoctorProbe::NocopyMmap, "nocopy-mmap"},
    {DoctorProbe::ResidencySet, "residency-set"},
    {DoctorProbe::Heap, "heap"},
};

// The host's macOS major version (kern.osproductversion on a Mac, NSProcessInfo only where sysctl has none; from the
// snapshot in the Linux test build); 0 when unknown, in which case each probe lets Metal decide.
int macosMajor() {
  HostFacts facts = readHostFacts();
  return facts.osVersion.known ? atoi(facts.osVersion.value.c_str()) : 0;
}

ProbeOutcome runProbe(DoctorProbe probe, ProbeContext &ctx) {
  switch (probe) {
    case DoctorProbe::SimdgroupReduction:
      return runSimdgroupReduction(ctx);
    case DoctorProbe::SimdgroupMatrix:
      return runSimdgroupMatrix(ctx);
    case DoctorProbe::Bfloat:
      return runBfloat(ctx);
    case DoctorProbe::ThreadgroupMemory:
      return runThreadgroupMemory(ctx);
    case DoctorProbe::NocopyMmap:
      return runNocopyMmap(ctx);
    case DoctorProbe::ResidencySet:
      return runResidencySet(ctx);
    case DoctorProbe::Heap:
      return runHeap(ctx);
  }
  return makeOutcome(probe, DoctorStatus::Error, "unknown probe");
}

std::string utf8(NSString *s) {
  const char *text = s != nil ? [s UTF8String] : nullptr;
  return text != nullptr ? text : "";
}

// A Metal exception becomes the probe's `error` outcome, never a crash of the host process. There is no C++ `try`:
// node-gyp compiles every addon with -fno-exceptions on a Mac (Node's common.gypi), so nothing here throws C++
// exceptions, and one thrown by the standard library (an allocation failure) ends the process as in any addon built
// that way. -fobjc-exceptions keeps @try/@catch for the exceptions Metal raises.
#if defined(GNU_RUNTIME)
// GCC's runtime (the Linux test build): `@catch (id)` is a catch-all there that would also take a foreign exception
// and hand over a pointer that is no object, so the handler names NSException's class.
ProbeOutcome runGuarded(DoctorProbe probe, ProbeContext &ctx) {
  @try {
    return runProbe(probe, ctx);
  } @catch (NSException *exception) {
    return makeOutcome(probe, DoctorStatus::Error, "Metal raised " + exceptionText(exception));
  }
}
#else
// Apple's runtime: `@catch (id)` takes Objective-C exceptions only, and naming NSException would link CoreFoundation.
ProbeOutcome runGuarded(DoctorProbe probe, ProbeContext &ctx) {
  @try {
    return runProbe(probe, ctx);
  } @catch (id exception) {
    return makeOutcome(probe, DoctorStatus::Error, "Metal raised " + exceptionText(exception));
  }
}
#endif

DoctorDevice describe(id<MTLDevice> device, int index) {
  DoctorDevice d;
  d.index = index;
  d.name = utf8([device name]);
  d.className = class_getName(object_getClass((id)device));
  if ([(id)device respondsToSelector:@selector(registryID)]) d.registryId = [device registryID];
  return d;
}

}  // namespace

const char *doctorProbeId(DoctorProbe probe) {
  for (const ProbeName &p : kProbeNames) {
    if (p.probe == probe) return p.id;
  }
  return "unknown";
}

bool parseDoctorProbe(const std::string &id, DoctorProbe *out) {
  for (const ProbeName &p : kProbeNames) {
    if (id == p.id) {
      *out = p.probe;
      return true;
    }
  }
  return false;
}

const char *doctorStatusName(DoctorStatus status) {
  switch (status) {
    case DoctorStatus::Pass:
      return "pass";
    case DoctorStatus::WrongResult:
      return "wrong-result";
    case DoctorStatus::Fail:
      return "fail";
    case DoctorStatus::Unsupported:
      return "unsupported";
    case DoctorStatus::Timeout:
      return "timeout";
    case DoctorStatus::Skipped:
      return "skipped";
    case DoctorStatus::Error:
      return "error";
  }
  return "error";
}

DoctorResult runDoctor(const DoctorOptions &options) {
  DoctorResult result;
  DeviceList list = copyDevices(true);
  int count = static_cast<int>(list.devices.size());
  if (count == 0 || options.device < 0 || options.device >= count) {
    result.errorCode = "ERR_NO_DEVICE";
    result.message = count == 0 ? "Metal returned no device, so there is nothing to run the doctor on"
                                : "Metal has no device " + std::to_string(options.device) + " (it lists " +
                                      std::to_string(count) + ": 0–" + std::to_string(count - 1) + ")";
    releaseDevices(list);
    return result;
  }
  id<MTLDevice> device = (id<MTLDevice>)list.devices[options.device];
  result.device = describe(device, options.device);
  int osMajor = macosMajor();
  for (DoctorProbe probe : options.probes) {
    ScopedAutoreleasePool pool;
    ProbeContext ctx{device, options, Deadline(options.timeoutMs), osMajor};
    ProbeOutcome outcome = runGuarded(probe, ctx);
    outcome.id = probe;
    outcome.ms = ctx.deadline.elapsedMs();
    outcome.compileMs = ctx.compileMs;
    result.outcomes.push_back(outcome);
  }
  releaseDevices(list);
  result.ok = true;
  return result;
}

}  // namespace mcs
