// Linux test build only: host facts come from the snapshot the simulated Metal library loaded, and the image list
// from the ELF loader, so the consumer scan runs the same matching code as on macOS.
#include "host.h"

#include <link.h>

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

int addImage(struct dl_phdr_info *info, size_t, void *data) {
  // The main program has an empty name here; only libraries matter to the consumer scan.
  if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') {
    static_cast<std::vector<std::string> *>(data)->push_back(info->dlpi_name);
  }
  return 0;
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
  facts.cpuBrand = optionalOf(sim.cpuBrand);
  return facts;
}

uint64_t deviceSetGeneration() {
  return MTLSimGetLoads();
}

std::vector<std::string> loadedImagePaths() {
  std::vector<std::string> paths;
  dl_iterate_phdr(addImage, &paths);
  return paths;
}

uint64_t imageLoads() {
  // glibc counts every object it has loaded (dlpi_adds), in each callback alike.
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](struct dl_phdr_info *info, size_t, void *data) {
        *static_cast<unsigned long long *>(data) = info->dlpi_adds;
        return 1;
      },
      &adds);
  return adds;
}

}  // namespace mcs
