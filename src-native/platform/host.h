// Facts about the host, read by the only platform-specific files: host_darwin.mm (sysctl, NSProcessInfo, dyld) on
// macOS and host_sim.mm (the snapshot loaded by test/sim-metal, the ELF loader's image list) in the Linux test build.
// Nothing here touches Metal: MTLCreateSystemDefaultDevice() switches a dual-GPU Mac to its discrete GPU, so host
// facts are read first and devices only where they are needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcs {

struct Optional {
  bool known = false;
  std::string value;
};

struct HostFacts {
  std::string platform;  // "darwin" live, "simulated" in the test build
  std::string snapshot;  // snapshot id in the test build
  Optional osVersion;
  Optional osBuild;
  Optional model;
  int isVirtualMachine = -1;  // 1, 0, -1 unknown
  Optional arch;
  bool memoryKnown = false;  // hw.memsize
  uint64_t memoryBytes = 0;
  int translated = -1;        // sysctl.proc_translated: 1 under Rosetta, 0 native, -1 unknown
  Optional cpuBrand;          // machdep.cpu.brand_string; in a guest the host's, with " (Virtual)"
  Optional recordedPlatform;  // the platform the snapshot was recorded on (test build only)
};

HostFacts readHostFacts();

// Paths of the images (executable and libraries) loaded into this process, in load order. Used only to recognise
// Metal consumers, so a path the loader cannot name is left out.
std::vector<std::string> loadedImagePaths();

// How many images this process has loaded so far, each load counted (a library unloaded and loaded again at the same
// path, a rebuilt plugin, counts twice). With the paths, what tells a scan of the loaded images it is out of date.
uint64_t imageLoads();

// Which set of Metal devices the process has: the same number for the life of a process on macOS; in the test build, a
// new one each time the simulated Metal loads another snapshot. A stock baseline belongs to the set it was read from.
uint64_t deviceSetGeneration();

}  // namespace mcs
