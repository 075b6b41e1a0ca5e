#include "capabilities.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <objc/runtime.h>

#include <algorithm>
#include <utility>

namespace mcs {
namespace {

bool responds(id<MTLDevice> device, const char *selector) {
  return [(id)device respondsToSelector:sel_registerName(selector)] ? true : false;
}

std::string locationName(MTLDeviceLocation location) {
  switch (location) {
    case MTLDeviceLocationBuiltIn:
      return "builtIn";
    case MTLDeviceLocationSlot:
      return "slot";
    case MTLDeviceLocationExternal:
      return "external";
    default:
      return "unspecified";
  }
}

// UTF8String may return NULL (a string it cannot convert), and std::string from NULL is undefined behaviour.
std::string utf8(NSString *s) {
  const char *text = s == nil ? nullptr : [s UTF8String];
  return text == nullptr ? std::string() : std::string(text);
}

}  // namespace

namespace {

// Only the default device, numbered where MTLCopyAllDevices() lists it (0 when it does not: the headless fallback).
// Its own object is kept, as MTLCreateSystemDefaultDevice() returned it: that is what engines such as ggml ask.
DeviceList defaultOnly(DeviceList all, id<MTLDevice> defaultDevice) {
  DeviceList list;
  if (defaultDevice != nil) {
    list.devices.push_back((void *)[(id)defaultDevice retain]);
    list.indexes.push_back(all.defaultIndex < 0 ? 0 : all.indexes[all.defaultIndex]);
    list.defaultIndex = 0;
  }
  releaseDevices(all);
  return list;
}

}  // namespace

DeviceList copyDevices(bool all) {
  DeviceList list;
  id<MTLDevice> defaultDevice = MTLCreateSystemDefaultDevice();
  NSArray *devices = MTLCopyAllDevices();
  for (NSUInteger i = 0; i < [devices count]; i++) {
    id device = [devices objectAtIndex:i];
    if (device == (id)defaultDevice) list.defaultIndex = static_cast<int>(list.devices.size());
    list.indexes.push_back(static_cast<int>(list.devices.size()));
    list.devices.push_back((void *)[device retain]);
  }
  [devices release];
  // Apple documents no identity between the two calls' objects, so fall back to the registry ID.
  if (list.defaultIndex < 0 && defaultDevice != nil && responds(defaultDevice, "registryID")) {
    for (size_t i = 0; i < list.devices.size(); i++) {
      id<MTLDevice> candidate = (id<MTLDevice>)list.devices[i];
      if (responds(candidate, "registryID") && [candidate registryID] == [defaultDevice registryID]) {
        list.defaultIndex = static_cast<int>(i);
        break;
      }
    }
  }
  // Some headless sessions list no devices yet still have a default one (MLX falls back the same way).
  if (list.devices.empty() && defaultDevice != nil) {
    list.devices.push_back((void *)[(id)defaultDevice retain]);
    list.indexes.push_back(0);
    list.defaultIndex = 0;
  }
  if (!all) {
    list = defaultOnly(std::move(list), defaultDevice);
    [(id)defaultDevice release];
    return list;
  }
  if (defaultDevice != nil) {
    Class defaultClass = object_getClass((id)defaultDevice);
    bool listed = false;
    for (void *device : list.devices) listed = listed || object_getClass((id)device) == defaultClass;
    if (!listed) list.separateDefault = (void *)[(id)defaultDevice retain];
  }
  [(id)defaultDevice release];
  return list;
}

void releaseDevices(DeviceList &list) {
  for (void *device : list.devices) [(id)device release];
  list.devices.clear();
  list.indexes.clear();
  if (list.separateDefault != nullptr) [(id)list.separateDefault release];
  list.separateDefault = nullptr;
}

DeviceCapabilities readCapabilities(void *object) {
  id<MTLDevice> device = (id<MTLDevice>)object;
  DeviceCapabilities caps;
  caps.name = utf8([device name]);
  caps.className = class_getName(object_getClass((id)device));
  if (responds(device, "registryID")) {
    caps.hasRegistryId = true;
    caps.registryId = [device registryID];
  }
  if (responds(device, "supportsFamily:")) {
    caps.hasFamilies = true;
    for (size_t i = 0; i < kFamilyCount; i++) {
      caps.families[i] = [device supportsFamily:(MTLGPUFamily)kFamilies[i].value] ? true : false;
    }
  }
  if (responds(device, "maxThreadgroupMemoryLength")) {
    caps.hasMaxThreadgroupMemoryLength = true;
    caps.maxThreadgroupMemoryLength = [device maxThreadgroupMemoryLength];
  }
  if (responds(device, "maxThreadsPerThreadgroup")) {
    MTLSize size = [device maxThreadsPerThreadgroup];
    caps.hasMaxThreadsPerThreadgroup = true;
    caps.maxThreads[0] = size.width;
    caps.maxThreads[1] = size.height;
    caps.maxThreads[2] = size.depth;
  }
  if (responds(device, "recommendedMaxWorkingSetSize")) {
    caps.hasRecommendedMaxWorkingSetSize = true;
    caps.recommendedMaxWorkingSetSize = [device recommendedMaxWorkingSetSize];
  }
  if (responds(device, "maxBufferLength")) {
    caps.hasMaxBufferLength = true;
    caps.maxBufferLength = [device maxBufferLength];
  }
  if (responds(device, "hasUnifiedMemory")) {
    caps.hasUnifiedMemoryKnown = true;
    caps.hasUnifiedMemory = [device hasUnifiedMemory] ? true : false;
  }
  if (responds(device, "location")) caps.location = locationName([device location]);
  // Through performSelector: `architecture` is macOS 14+, and the addon's deployment target is older.
  if (responds(device, "architecture")) {
    id architecture = [(id)device performSelector:sel_registerName("architecture")];
    if (architecture != nil && [architecture respondsToSelector:sel_registerName("name")]) {
      caps.hasArchitecture = true;
      caps.architecture = utf8((NSString *)[architecture performSelector:sel_registerName("name")]);
    }
  }
  return caps;
}

std::vector<void *> distinctDeviceClasses(const DeviceList &list) {
  std::vector<void *> classes;
  for (void *device : list.devices) {
    void *cls = (void *)object_getClass((id)device);
    if (std::find(classes.begin(), classes.end(), cls) == classes.end()) classes.push_back(cls);
  }
  if (list.separateDefault != nullptr) classes.push_back((void *)object_getClass((id)list.separateDefault));
  return classes;
}

}  // namespace mcs
