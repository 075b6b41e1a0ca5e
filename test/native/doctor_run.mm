// The native doctor without Node, for AddressSanitizer + UndefinedBehaviorSanitizer (scripts/build/build-sim.mjs
// --sanitize): every probe on every device of the selected snapshot, several rounds, so manual retain/release, the
// NoCopy mapping and the temporary files are exercised under the sanitizers. Prints one line per outcome of the
// first round, then a summary. Only doctor's own code is instrumented, not GNUstep or the simulated Metal.
#import <Foundation/Foundation.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../../src-native/engine/capabilities.h"
#include "../../src-native/doctor/doctor.h"

int main(int argc, char **argv) {
  // doctor_run ROUNDS TEMPDIR [HANGING_DEVICE]: the hanging device gets 20 ms per probe, the others 5 s.
  int rounds = argc > 1 ? atoi(argv[1]) : 3;
  const char *tempDir = argc > 2 ? argv[2] : "/tmp";
  long hanging = argc > 3 ? atol(argv[3]) : -1;
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  mcs::DeviceList list = mcs::copyDevices(true);
  size_t deviceCount = list.devices.size();
  mcs::releaseDevices(list);
  unsigned long outcomes = 0;
  for (int round = 0; round < rounds; round++) {
    for (size_t device = 0; device < deviceCount; device++) {
      mcs::DoctorOptions options;
      options.device = static_cast<int>(device);
      for (const char *id : {"simdgroup-reduction", "simdgroup-matrix", "bfloat", "threadgroup-memory", "nocopy-mmap",
                             "residency-set"}) {
        mcs::DoctorProbe probe;
        mcs::parseDoctorProbe(id, &probe);
        options.probes.push_back(probe);
      }
      options.timeoutMs = static_cast<long>(device) == hanging ? 20 : 5000;
      options.threadgroupSizes = {16384, 32768, 49152, 65536};
      // As in a VM: every size is tried, so the fixture's faults above 32 KiB are reached.
      options.aboveStockThreadgroupMemory = true;
      options.mmapSize = 1 << 20;
      options.tempDir = tempDir;
      mcs::DoctorResult result = mcs::runDoctor(options);
      if (!result.ok) {
        fprintf(stderr, "doctor failed: %s\n", result.message.c_str());
        return 1;
      }
      for (const mcs::ProbeOutcome &o : result.outcomes) {
        if (round == 0) printf("%zu %s %s\n", device, mcs::doctorProbeId(o.id), mcs::doctorStatusName(o.status));
        outcomes++;
      }
    }
  }
  [pool release];
  printf("rounds %d, devices %zu, outcomes %lu\n", rounds, deviceCount, outcomes);
  return 0;
}
