// Reads one id<MTLDevice> into a plain struct. No N-API here. `has*` false means the device does not respond to
// that query (an older macOS), which JavaScript reports as null rather than a guess.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "families.h"

namespace mcs {

struct DeviceCapabilities {
  std::string name;
  std::string className;
  bool hasRegistryId = false;
  uint64_t registryId = 0;
  bool hasFamilies = false;
  bool families[kFamilyCount] = {};
  bool hasMaxThreadgroupMemoryLength = false;
  uint64_t maxThreadgroupMemoryLength = 0;
  bool hasMaxThreadsPerThreadgroup = false;
  uint64_t maxThreads[3] = {0, 0, 0};
  bool hasRecommendedMaxWorkingSetSize = false;
  uint64_t recommendedMaxWorkingSetSize = 0;
  bool hasMaxBufferLength = false;
  uint64_t maxBufferLength = 0;
  bool hasUnifiedMemoryKnown = false;
  bool hasUnifiedMemory = false;
  std::string location;  // empty: unknown
  bool hasArchitecture = false;
  std::string architecture;
  bool isDefault = false;
  int index = 0;
};

struct DeviceList {
  // Retained device objects (id<MTLDevice>), released by releaseDevices.
  std::vector<void *> devices;
  // Each device's number: its position in MTLCopyAllDevices(), the one numbering every command and doctor's `device`
  // use, also when only the default device is listed.
  std::vector<int> indexes;
  // The default device's position in `devices`, or -1.
  int defaultIndex = -1;
  // With `all`: the object MTLCreateSystemDefaultDevice() returned, when its class is none of the listed devices'
  // classes (a validation or capture layer can wrap the default device only). Retained; engines such as ggml ask
  // this object, so its class is patched too.
  void *separateDefault = nullptr;
};

// The default device alone (numbered by its place in MTLCopyAllDevices()) or, with `all`, every device in
// MTLCopyAllDevices() order. Pure public Metal API, so the simulated library answers it on Linux.
DeviceList copyDevices(bool all);
void releaseDevices(DeviceList &list);

DeviceCapabilities readCapabilities(void *device);

// Distinct concrete classes of the devices (the separate default's last), in first-seen order.
std::vector<void *> distinctDeviceClasses(const DeviceList &list);

}  // namespace mcs
