// Linux test build only: host facts come from the snapshot the simulated Metal library loaded.
#include "host.h"

#import <MetalSim/MetalSim.h>

namespace mcs {
namespace {

Optional optionalOf(const char *s) {
  Optional out;
  if (s != NULL) {
    out.known = true;
    out.value = s;
  }
  return out;
}

}  // namespace

HostFacts readHostFacts() {
  HostFacts facts;
  facts.platform = "simulated";
  MTLSimHostFacts sim;
  if (MTLSimGetHostFacts(&sim) == 0) return facts;
  facts.snapshot = sim.snapshotId != NULL ? sim.snapshotId : "";
  facts.recordedPlatform = optionalOf(sim.platform);
  facts.osVersion = optionalOf(sim.osVersion);
  facts.osBuild = optionalOf(sim.osBuild);
  facts.model = optionalOf(sim.model);
  facts.isVirtualMachine = sim.isVirtualMachine;
  facts.arch = optionalOf(sim.arch);
  facts.memoryKnown = sim.hasMemoryBytes != 0;
  facts.memoryBytes = sim.memoryBytes;
  facts.translated = sim.translated;
  return facts;
}

}  // namespace mcs
