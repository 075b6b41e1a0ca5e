/*
 * The simulated Metal library. Devices are built from a snapshot (snapshots/README.md): the one the environment names,
 * read at the first call, or the one a test loads later with MTLSimLoadSnapshot() (MetalSim.h). Classes have a
 * layout like Apple's: a private base class `_MTLDevice` implements the queries, and each device's concrete class
 * (named as in the snapshot, e.g. `AppleParavirtDevice`) is created at run time as its subclass. A device whose
 * snapshot says `simulation.methodsOnConcreteClass` gets its own copies of the hooked queries (`name` included), so
 * hook tests meet both an inherited and an own method. A device responds to `architecture` only where the snapshot
 * records one, the way a pre-macOS-14 device does not. A device whose snapshot names `simulation.defaultObjectClass` is
 * handed out by MTLCreateSystemDefaultDevice() as a second object of that class (as a validation or capture layer wraps
 * the default device), while MTLCopyAllDevices() lists the plain one.
 *
 * Loading another snapshot never frees what an earlier one made: its device records, objects and host strings stay
 * (a test may still hold a device, and the hook engine's records name classes), and a class another snapshot made is
 * reused when its layout (superclass and own queries) is the same, refused otherwise. What differs between snapshots
 * without a class of its own (`architecture`, heaps, residency sets) is answered per device by -respondsToSelector:.
 */
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalSim/MetalSim.h>
#include <objc/runtime.h>

// Snapshot family keys and their MTLGPUFamily values: the project's one native table.
#include "../../../src-native/engine/families.h"
#include "SimCompute.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#ifndef MCS_SIM_SNAPSHOT_DIR
#error "MCS_SIM_SNAPSHOT_DIR must name the snapshots folder"
#endif

namespace {

struct SimDevice {
  std::string name;
  std::string className;
  uint64_t registryId = 0;
  std::vector<NSInteger> familiesYes;
  uint64_t maxThreadgroupMemoryLength = 0;
  MTLSize maxThreadsPerThreadgroup = {0, 0, 0};
  uint64_t recommendedMaxWorkingSetSize = 0;
  uint64_t maxBufferLength = 0;
  bool hasUnifiedMemory = false;
  MTLDeviceLocation location = MTLDeviceLocationUnspecified;
  bool hasArchitecture = false;
  std::string architecture;
  bool methodsOnConcreteClass = false;
  std::string lacks;               // a query selector this device's class does not implement (test aid)
  long driftAfter = -1;            // after this many maxThreadgroupMemoryLength calls, answer 16 bytes more (test aid)
  std::string subclassOf;          // make the class a subclass of another device's class (test aid)
  std::string defaultObjectClass;  // the class of the object MTLCreateSystemDefaultDevice() returns (test aid)
  id object = nil;
  id defaultObject = nil;
};

struct SimHost {
  std::string snapshotId, platform, osVersion, osBuild, model, arch, cpuBrand;
  bool hasOsVersion = false, hasOsBuild = false, hasModel = false, hasArch = false, hasCpuBrand = false;
  int isVirtualMachine = -1;
  bool hasMemoryBytes = false;
  unsigned long long memoryBytes = 0;
  int translated = -1;
};

std::once_flag gLoadOnce;
// Serialises loads (the environment's and MTLSimLoadSnapshot()'s). Queries do not take it: no other thread may use
// Metal while a test loads another snapshot.
std::mutex gLoadMutex;
bool gLoaded = false;
// Every device record this process loaded, addressed by the objects' _simIndex. Reserved once and never reallocated,
// so a record stays where it is while another thread reads it and after a later load.
constexpr size_t kMaxDeviceRecords = kSimMaxDeviceRecords;
std::vector<SimDevice> gRecords;
std::atomic<long> gThreadgroupCalls[kMaxDeviceRecords];
// The loaded snapshot's devices: indexes into gRecords, in the snapshot's order.
std::vector<size_t> gDevices;
// Every host this process loaded (MTLSimGetHostFacts hands out its strings); gHost is the loaded snapshot's.
std::vector<std::unique_ptr<SimHost>> gHosts;
const SimHost kNoHost{};
const SimHost *gHost = &kNoHost;
size_t gDefaultDevice = 0;
std::atomic<unsigned long> gCreateDefaultCalls{0};
std::atomic<unsigned long> gCopyAllCalls{0};
std::atomic<unsigned long> gLoads{0};
// The layout each device class was made with (its superclass and own queries), by class name.
std::map<std::string, std::string> gClassLayouts;
// Where simFail() writes while MTLSimLoadSnapshot() runs (its caller gets the reason); stderr otherwise.
std::string *gProblemSink = nullptr;
// Set by the load-time constructor, before C++ globals of this library may exist: plain data only.
char gCountsFile[4096];

void writeDeviceCalls() {
  FILE *f = fopen(gCountsFile, "w");
  if (f == NULL) return;
  fprintf(f, "{\"MTLCreateSystemDefaultDevice\":%lu,\"MTLCopyAllDevices\":%lu}\n", gCreateDefaultCalls.load(),
          gCopyAllCalls.load());
  fclose(f);
}

__attribute__((constructor)) void simMetalLoaded() {
  const char *file = getenv("METAL_CAP_SHIM_SIM_COUNTS_FILE");
  if (file == NULL || *file == '\0' || strlen(file) >= sizeof(gCountsFile)) return;
  strcpy(gCountsFile, file);
  atexit(writeDeviceCalls);
}

void simFail(const std::string &message) {
  // The TypeScript layer validates snapshots before native code sees them, so this only fires for a hand-run consumer
  // (or, through MTLSimLoadSnapshot(), for the test that loaded the snapshot).
  if (gProblemSink != nullptr) {
    if (gProblemSink->empty()) *gProblemSink = message;
    return;
  }
  fprintf(stderr, "sim-metal: %s\n", message.c_str());
}

std::string snapshotPath(const char *selector) {
  std::string s(selector);
  bool isPath = s.find('/') != std::string::npos || (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
  if (isPath) return s;
  return std::string(MCS_SIM_SNAPSHOT_DIR) + "/" + s + ".json";
}

NSDictionary *dictAt(NSDictionary *d, NSString *key) {
  id v = [d objectForKey:key];
  return [v isKindOfClass:[NSDictionary class]] ? (NSDictionary *)v : nil;
}

bool stringAt(NSDictionary *d, NSString *key, std::string *out) {
  id v = [d objectForKey:key];
  if (![v isKindOfClass:[NSString class]]) return false;
  *out = [(NSString *)v UTF8String];
  return true;
}

uint64_t u64At(NSDictionary *d, NSString *key) {
  id v = [d objectForKey:key];
  return [v isKindOfClass:[NSNumber class]] ? [(NSNumber *)v unsignedLongLongValue] : 0;
}

bool boolAt(NSDictionary *d, NSString *key) {
  id v = [d objectForKey:key];
  return [v isKindOfClass:[NSNumber class]] ? [(NSNumber *)v boolValue] : false;
}

MTLDeviceLocation locationFrom(const std::string &s) {
  if (s == "builtIn") return MTLDeviceLocationBuiltIn;
  if (s == "slot") return MTLDeviceLocationSlot;
  if (s == "external") return MTLDeviceLocationExternal;
  return MTLDeviceLocationUnspecified;
}

// The classes whose queries the simulation implements on the class itself rather than inheriting them from
// `_MTLDevice`, when a simulation file does not say (`simulation.methodsOnConcreteClass`): the GPU drivers' own classes
// of the bundled snapshots, so that the bundled snapshots alone exercise both of the hook engine's paths (add a
// method to the class; replace the class's own method).
bool implementsQueriesItself(const std::string &className) {
  static const char *const kOwnQueries[] = {"AGXG13DDevice", "AMDRadeonX6000_AMDNavi14GraphicsDevice"};
  for (const char *name : kOwnQueries) {
    if (className == name) return true;
  }
  return false;
}

SimDevice deviceFrom(NSDictionary *d) {
  SimDevice dev;
  stringAt(d, @"name", &dev.name);
  stringAt(d, @"className", &dev.className);
  dev.registryId = u64At(d, @"registryId");
  NSDictionary *families = dictAt(d, @"families");
  for (const mcs::FamilyInfo &f : mcs::kFamilies) {
    if (boolAt(families, [NSString stringWithUTF8String:f.key])) dev.familiesYes.push_back(f.value);
  }
  dev.maxThreadgroupMemoryLength = u64At(d, @"maxThreadgroupMemoryLength");
  NSDictionary *tg = dictAt(d, @"maxThreadsPerThreadgroup");
  dev.maxThreadsPerThreadgroup = {(NSUInteger)u64At(tg, @"width"), (NSUInteger)u64At(tg, @"height"),
                                  (NSUInteger)u64At(tg, @"depth")};
  dev.recommendedMaxWorkingSetSize = u64At(d, @"recommendedMaxWorkingSetSize");
  dev.maxBufferLength = u64At(d, @"maxBufferLength");
  dev.hasUnifiedMemory = boolAt(d, @"hasUnifiedMemory");
  std::string location;
  if (stringAt(d, @"location", &location)) dev.location = locationFrom(location);
  dev.hasArchitecture = stringAt(d, @"architecture", &dev.architecture);
  NSDictionary *simulation = dictAt(d, @"simulation");
  id own = [simulation objectForKey:@"methodsOnConcreteClass"];
  dev.methodsOnConcreteClass =
      [own isKindOfClass:[NSNumber class]] ? [(NSNumber *)own boolValue] : implementsQueriesItself(dev.className);
  stringAt(simulation, @"lacks", &dev.lacks);
  stringAt(simulation, @"subclassOf", &dev.subclassOf);
  stringAt(simulation, @"defaultObjectClass", &dev.defaultObjectClass);
  id drift = [simulation objectForKey:@"driftAfter"];
  if ([drift isKindOfClass:[NSNumber class]]) dev.driftAfter = [(NSNumber *)drift longValue];
  return dev;
}

SimHost hostFrom(NSDictionary *snapshot, NSDictionary *h) {
  SimHost host;
  stringAt(snapshot, @"id", &host.snapshotId);
  stringAt(h, @"platform", &host.platform);
  host.hasOsVersion = stringAt(h, @"osVersion", &host.osVersion);
  host.hasOsBuild = stringAt(h, @"osBuild", &host.osBuild);
  host.hasModel = stringAt(h, @"model", &host.model);
  host.hasArch = stringAt(h, @"arch", &host.arch);
  host.hasCpuBrand = stringAt(h, @"cpuBrand", &host.cpuBrand);
  id vm = [h objectForKey:@"isVirtualMachine"];
  if ([vm isKindOfClass:[NSNumber class]]) host.isVirtualMachine = [(NSNumber *)vm boolValue] ? 1 : 0;
  id memory = [h objectForKey:@"memoryBytes"];
  if ([memory isKindOfClass:[NSNumber class]]) {
    host.hasMemoryBytes = true;
    host.memoryBytes = [(NSNumber *)memory unsignedLongLongValue];
  }
  id translated = [h objectForKey:@"translated"];
  if ([translated isKindOfClass:[NSNumber class]]) host.translated = [(NSNumber *)translated boolValue] ? 1 : 0;
  return host;
}

bool createDeviceObjects();

// No snapshot is loaded any more; what the earlier one made stays (see the top of this file).
void unloadSnapshot() {
  gDevices.clear();
  gHost = &kNoHost;
  gDefaultDevice = 0;
  gLoaded = false;
}

// Back to a new process's state, records and all (the fuzz harness, between inputs: it holds no device).
[[maybe_unused]] void forgetSnapshot() {
  for (SimDevice &dev : gRecords) {
    [dev.object release];
    [dev.defaultObject release];
  }
  unloadSnapshot();
  gRecords.clear();
  gHosts.clear();
  for (std::atomic<long> &calls : gThreadgroupCalls) calls.store(0);
  simComputeForget();
}

// Builds the devices from a snapshot's bytes (`where` names it in messages). A snapshot the simulation cannot lay out
// loads no device at all, never half of them.
bool loadSnapshotData(NSData *data, const std::string &where) {
  id root = data ? [NSJSONSerialization JSONObjectWithData:data options:0 error:NULL] : nil;
  if (![root isKindOfClass:[NSDictionary class]]) {
    simFail("cannot read snapshot " + where);
    return false;
  }
  NSDictionary *snapshot = (NSDictionary *)root;
  gHosts.push_back(std::make_unique<SimHost>(hostFrom(snapshot, dictAt(snapshot, @"host"))));
  const SimHost &host = *gHosts.back();
  std::vector<NSDictionary *> entries;
  id devices = [snapshot objectForKey:@"devices"];
  if ([devices isKindOfClass:[NSArray class]]) {
    for (id d in (NSArray *)devices) {
      if ([d isKindOfClass:[NSDictionary class]]) entries.push_back((NSDictionary *)d);
    }
  }
  if (gRecords.capacity() < kMaxDeviceRecords) gRecords.reserve(kMaxDeviceRecords);
  if (entries.size() > kMaxDeviceRecords - gRecords.size()) {
    simFail("more than " + std::to_string(kMaxDeviceRecords) + " simulated devices loaded in one process");
    return false;
  }
  for (NSDictionary *d : entries) {
    gDevices.push_back(gRecords.size());
    gRecords.push_back(deviceFrom(d));
    simComputeReadDevice(gDevices.back(), d, host.hasOsVersion ? host.osVersion.c_str() : NULL);
  }
  gHost = &host;
  gDefaultDevice = (size_t)u64At(snapshot, @"defaultDevice");
  if (gDefaultDevice >= gDevices.size()) gDefaultDevice = 0;
  gLoaded = true;
  if (!createDeviceObjects()) {
    unloadSnapshot();
    return false;
  }
  return true;
}

// A snapshot file's bytes, or nil with the reason in `problem`: opened without blocking and checked with fstat before
// any read, so a FIFO or a device under the name is refused at once, never waited on; at most kMaxSnapshotBytes (the
// TypeScript readers' bound).
NSData *readRegularFile(const std::string &path, std::string *problem) {
  constexpr off_t kMaxSnapshotBytes = 16 * 1024 * 1024;
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *problem = strerror(errno);
    return nil;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxSnapshotBytes) {
    *problem = S_ISREG(st.st_mode) ? "larger than 16 MiB" : "not a regular file (a FIFO, a socket or a device)";
    close(fd);
    return nil;
  }
  std::vector<char> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  return [NSData dataWithBytes:bytes.data() length:got];
}

// Loads the snapshot `selector` names (a bundled name or a path; empty: none), in place of the loaded one. Caller holds
// gLoadMutex.
bool loadSelected(const char *selector) {
  unloadSnapshot();
  gLoads.fetch_add(1);
  if (selector == NULL || *selector == '\0') return true;
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  std::string path = snapshotPath(selector);
  std::string problem;
  NSData *data = readRegularFile(path, &problem);
  bool loaded = false;
  if (data == nil) {
    simFail("cannot read snapshot " + path + ": " + problem);
  } else {
    loaded = loadSnapshotData(data, path);
  }
  [pool release];
  return loaded;
}

void loadSnapshot() {
  std::lock_guard<std::mutex> lock(gLoadMutex);
  loadSelected(getenv("METAL_CAP_SHIM_SIM_SNAPSHOT"));
}

void ensureLoaded() {
  std::call_once(gLoadOnce, loadSnapshot);
}

}  // namespace

@implementation MTLArchitecture
- (NSString *)name {
  return nil;
}
@end

/* GCC's runtime has fragile ivars, so they live in the @interface of a private subclass, not in Apple's header. */
@interface SimArchitecture : MTLArchitecture {
  NSString *_name;
}
- (id)initWithName:(NSString *)name;
@end

@implementation SimArchitecture
- (id)initWithName:(NSString *)name {
  if ((self = [super init])) _name = [name copy];
  return self;
}
- (void)dealloc {
  [_name release];
  [super dealloc];
}
- (NSString *)name {
  return _name;
}
@end

/* Apple's private device base class has this name; the hook engine must leave it untouched. */
@interface _MTLDevice : NSObject <MTLDevice> {
 @public
  size_t _simIndex;
}
@end

/* The base of a device class that lacks a query (simulation.lacks): same ivar layout as _MTLDevice, no methods; the
   concrete class gets copies of every query but the missing one. */
@interface _MTLPartialDevice : NSObject {
 @public
  size_t _simIndex;
}
@end

@implementation _MTLPartialDevice
@end

static const SimDevice &simDeviceOf(id self) {
  return gRecords[((_MTLDevice *)self)->_simIndex];
}

// Whether device record `index` answers `sel`: NO for what its snapshot lacks although its class, made or reused for
// another snapshot, has the method (`architecture`, heaps, residency sets).
static bool simResponds(size_t index, SEL sel) {
  // An object asked before its record is set (or a test's stray object past the records) has no say.
  if (index >= gRecords.size()) return true;
  if (strcmp(sel_getName(sel), "architecture") == 0) return gRecords[index].hasArchitecture;
  return simComputeResponds(index, sel);
}

@implementation _MTLPartialDevice (SimResponds)
- (BOOL)respondsToSelector:(SEL)sel {
  return simResponds(_simIndex, sel) && [super respondsToSelector:sel];
}
@end

static NSUInteger simThreadgroupMemory(id self) {
  size_t index = ((_MTLDevice *)self)->_simIndex;
  const SimDevice &dev = gRecords[index];
  long calls = gThreadgroupCalls[index].fetch_add(1) + 1;
  bool drifted = dev.driftAfter >= 0 && calls > dev.driftAfter;
  return (NSUInteger)dev.maxThreadgroupMemoryLength + (drifted ? 16 : 0);
}

static BOOL simSupportsFamily(id self, NSInteger family) {
  for (NSInteger yes : simDeviceOf(self).familiesYes) {
    if (yes == family) return YES;
  }
  return NO;
}

@implementation _MTLDevice
/* Added per concrete class at run time, only where the snapshot records an architecture. */
@dynamic architecture;
- (NSString *)name {
  return [NSString stringWithUTF8String:simDeviceOf(self).name.c_str()];
}
- (uint64_t)registryID {
  return simDeviceOf(self).registryId;
}
- (MTLSize)maxThreadsPerThreadgroup {
  return simDeviceOf(self).maxThreadsPerThreadgroup;
}
- (uint64_t)recommendedMaxWorkingSetSize {
  return simDeviceOf(self).recommendedMaxWorkingSetSize;
}
- (NSUInteger)maxThreadgroupMemoryLength {
  return simThreadgroupMemory(self);
}
- (NSUInteger)maxBufferLength {
  return (NSUInteger)simDeviceOf(self).maxBufferLength;
}
- (BOOL)hasUnifiedMemory {
  return simDeviceOf(self).hasUnifiedMemory ? YES : NO;
}
- (MTLDeviceLocation)location {
  return simDeviceOf(self).location;
}
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily {
  return simSupportsFamily(self, gpuFamily);
}
- (BOOL)respondsToSelector:(SEL)sel {
  return simResponds(_simIndex, sel) && [super respondsToSelector:sel];
}
@end

/* Distinct functions (not the base class's IMPs) so a test can tell an own method from an inherited one. */
static BOOL ownSupportsFamily(id self, SEL, NSInteger family) {
  return simSupportsFamily(self, family);
}
static id ownName(id self, SEL) {
  return [NSString stringWithUTF8String:simDeviceOf(self).name.c_str()];
}
static NSUInteger ownMaxThreadgroupMemoryLength(id self, SEL) {
  return simThreadgroupMemory(self);
}
static uint64_t ownRecommendedMaxWorkingSetSize(id self, SEL) {
  return simDeviceOf(self).recommendedMaxWorkingSetSize;
}
static id simArchitecture(id self, SEL) {
  NSString *name = [NSString stringWithUTF8String:simDeviceOf(self).architecture.c_str()];
  return [[[SimArchitecture alloc] initWithName:name] autorelease];
}

namespace {

const char *typesOf(Class cls, SEL sel) {
  return method_getTypeEncoding(class_getInstanceMethod(cls, sel));
}

const char *const kQuerySelectors[] = {"name",
                                       "registryID",
                                       "maxThreadsPerThreadgroup",
                                       "recommendedMaxWorkingSetSize",
                                       "maxThreadgroupMemoryLength",
                                       "maxBufferLength",
                                       "hasUnifiedMemory",
                                       "location",
                                       "supportsFamily:"};

// A class this library made for a device: below the base classes, never one of them (a device named _MTLDevice
// would make the hook engine patch the base class every device inherits from).
bool isSimDeviceClass(Class cls) {
  for (Class c = class_getSuperclass(cls); c != Nil; c = class_getSuperclass(c)) {
    if (c == [_MTLDevice class] || c == [_MTLPartialDevice class]) return true;
  }
  return false;
}

// A new class named `name` under `base`, or Nil after saying why (the runtime refuses a name some class already has).
Class allocateClass(Class base, const std::string &name) {
  Class cls = objc_allocateClassPair(base, name.c_str(), 0);
  if (cls == Nil) simFail("the runtime refused class name '" + name + "'");
  return cls;
}

// Gives a device class `architecture` when its device has one (the class may have it already; a device that has none
// does not respond to it: simResponds).
void addArchitecture(Class cls, const SimDevice &dev) {
  if (!dev.hasArchitecture) return;
  std::string types = std::string(@encode(id)) + @encode(id) + @encode(SEL);
  class_addMethod(cls, @selector(architecture), (IMP)simArchitecture, types.c_str());
}

// A class made for an earlier snapshot serves this one when it was made with the same layout; nothing can be taken
// out of a class, so another layout under the same name is refused (Nil, after saying why).
Class reuseClass(Class existing, const std::string &name, const std::string &layout) {
  auto made = gClassLayouts.find(name);
  if (made == gClassLayouts.end() || made->second == layout) return existing;
  simFail("class '" + name + "' was made for an earlier snapshot as " + made->second + ", and this one needs " +
          layout + ": a class cannot change in a running process; give the device another className");
  return Nil;
}

// Nil, after saying why, for a class the simulation cannot make: a name some other class already has (its instances
// have no _simIndex), a name the runtime refuses, a `subclassOf` chain that loops back (`depth` counts the links), or
// the name of a class an earlier snapshot made with another layout.
Class concreteClassFor(const SimDevice &dev, size_t depth = 0) {
  Class existing = objc_getClass(dev.className.c_str());
  if (existing != Nil && !isSimDeviceClass(existing)) {
    simFail("className '" + dev.className + "' is an existing class that is not a simulated device");
    return Nil;
  }
  Class base = [_MTLDevice class];
  if (!dev.lacks.empty()) {
    std::string layout = "a subclass of _MTLPartialDevice without " + dev.lacks;
    if (existing != Nil) return reuseClass(existing, dev.className, layout);
    Class cls = allocateClass([_MTLPartialDevice class], dev.className);
    if (cls == Nil) return Nil;
    for (const char *name : kQuerySelectors) {
      if (dev.lacks == name) continue;
      SEL sel = sel_registerName(name);
      class_addMethod(cls, sel, class_getMethodImplementation(base, sel), typesOf(base, sel));
    }
    objc_registerClassPair(cls);
    gClassLayouts[dev.className] = layout;
    return cls;
  }
  if (!dev.subclassOf.empty()) {
    if (depth >= gDevices.size()) {
      simFail("simulation.subclassOf of '" + dev.className + "' loops back to itself");
      return Nil;
    }
    for (size_t other : gDevices) {
      if (gRecords[other].className != dev.subclassOf) continue;
      base = concreteClassFor(gRecords[other], depth + 1);
      if (base == Nil) return Nil;
    }
  }
  std::string layout = std::string("a subclass of ") + class_getName(base) +
                       (dev.methodsOnConcreteClass ? " with queries of its own" : " inheriting its queries");
  if (existing != Nil) {
    Class cls = reuseClass(existing, dev.className, layout);
    if (cls != Nil) addArchitecture(cls, dev);
    return cls;
  }
  Class cls = allocateClass(base, dev.className);
  if (cls == Nil) return Nil;
  if (dev.methodsOnConcreteClass) {
    class_addMethod(cls, @selector(name), (IMP)ownName, typesOf(base, @selector(name)));
    class_addMethod(cls, @selector(supportsFamily:), (IMP)ownSupportsFamily, typesOf(base, @selector(supportsFamily:)));
    class_addMethod(cls, @selector(maxThreadgroupMemoryLength), (IMP)ownMaxThreadgroupMemoryLength,
                    typesOf(base, @selector(maxThreadgroupMemoryLength)));
    class_addMethod(cls, @selector(recommendedMaxWorkingSetSize), (IMP)ownRecommendedMaxWorkingSetSize,
                    typesOf(base, @selector(recommendedMaxWorkingSetSize)));
  }
  addArchitecture(cls, dev);
  objc_registerClassPair(cls);
  gClassLayouts[dev.className] = layout;
  return cls;
}

// A wrapper-like class over the same simulated device: inherits every query from _MTLDevice. Nil, after saying why,
// for a name that some class other than a simulated device already has.
Class defaultObjectClassFor(const SimDevice &dev) {
  Class existing = objc_getClass(dev.defaultObjectClass.c_str());
  // The layout of a concrete class that inherits its queries: one name may serve as either.
  const std::string layout = "a subclass of _MTLDevice inheriting its queries";
  if (existing != Nil) {
    if (!isSimDeviceClass(existing)) {
      simFail("defaultObjectClass '" + dev.defaultObjectClass +
              "' is an existing class that is not a simulated device");
      return Nil;
    }
    Class cls = reuseClass(existing, dev.defaultObjectClass, layout);
    if (cls != Nil) addArchitecture(cls, dev);
    return cls;
  }
  Class cls = allocateClass([_MTLDevice class], dev.defaultObjectClass);
  if (cls == Nil) return Nil;
  addArchitecture(cls, dev);
  objc_registerClassPair(cls);
  gClassLayouts[dev.defaultObjectClass] = layout;
  return cls;
}

bool createDeviceObjects() {
  std::vector<Class> classes, defaultClasses;
  for (size_t index : gDevices) {
    const SimDevice &dev = gRecords[index];
    Class cls = concreteClassFor(dev);
    Class defaultCls = dev.defaultObjectClass.empty() ? Nil : defaultObjectClassFor(dev);
    if (cls == Nil || (!dev.defaultObjectClass.empty() && defaultCls == Nil)) return false;
    classes.push_back(cls);
    defaultClasses.push_back(defaultCls);
  }
  for (size_t i = 0; i < gDevices.size(); i++) {
    size_t index = gDevices[i];
    _MTLDevice *object = (_MTLDevice *)[[classes[i] alloc] init];
    object->_simIndex = index;
    gRecords[index].object = object;
    if (defaultClasses[i] != Nil) {
      _MTLDevice *wrapper = (_MTLDevice *)[[defaultClasses[i] alloc] init];
      wrapper->_simIndex = index;
      gRecords[index].defaultObject = wrapper;
    }
    simComputeAttachDevice(object, index);
  }
  return true;
}

}  // namespace

MTL_EXTERN id<MTLDevice> MTLCreateSystemDefaultDevice(void) {
  gCreateDefaultCalls.fetch_add(1);
  ensureLoaded();
  if (gDevices.empty()) return nil;
  const SimDevice &dev = gRecords[gDevices[gDefaultDevice]];
  return [(dev.defaultObject != nil ? dev.defaultObject : dev.object) retain];
}

MTL_EXTERN NSArray<id<MTLDevice>> *MTLCopyAllDevices(void) {
  gCopyAllCalls.fetch_add(1);
  ensureLoaded();
  NSMutableArray *all = [[NSMutableArray alloc] initWithCapacity:gDevices.size()];
  for (size_t index : gDevices) [all addObject:gRecords[index].object];
  return all;
}

extern "C" int MTLSimGetHostFacts(MTLSimHostFacts *out) {
  ensureLoaded();
  memset(out, 0, sizeof(*out));
  out->isVirtualMachine = -1;
  out->translated = -1;
  if (!gLoaded) return 0;
  const SimHost &host = *gHost;
  out->snapshotId = host.snapshotId.c_str();
  out->platform = host.platform.c_str();
  out->osVersion = host.hasOsVersion ? host.osVersion.c_str() : NULL;
  out->osBuild = host.hasOsBuild ? host.osBuild.c_str() : NULL;
  out->model = host.hasModel ? host.model.c_str() : NULL;
  out->arch = host.hasArch ? host.arch.c_str() : NULL;
  out->isVirtualMachine = host.isVirtualMachine;
  out->hasMemoryBytes = host.hasMemoryBytes ? 1 : 0;
  out->memoryBytes = host.memoryBytes;
  out->translated = host.translated;
  out->cpuBrand = host.hasCpuBrand ? host.cpuBrand.c_str() : NULL;
  return 1;
}

extern "C" void MTLSimGetDeviceCalls(MTLSimDeviceCalls *out) {
  out->createSystemDefaultDevice = gCreateDefaultCalls.load();
  out->copyAllDevices = gCopyAllCalls.load();
}

extern "C" const char *MTLSimLoadSnapshot(const char *selector) {
  // Uses up the environment's load, so it never replaces this one later.
  std::call_once(gLoadOnce, [] {});
  std::lock_guard<std::mutex> lock(gLoadMutex);
  static std::string problem;
  problem.clear();
  gProblemSink = &problem;
  bool loaded = loadSelected(selector);
  gProblemSink = nullptr;
  gCreateDefaultCalls.store(0);
  gCopyAllCalls.store(0);
  if (!loaded && problem.empty()) problem = "the snapshot loaded no device";
  return loaded ? NULL : problem.c_str();
}

extern "C" unsigned long MTLSimGetLoads(void) {
  ensureLoaded();
  return gLoads.load();
}
