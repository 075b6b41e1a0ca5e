/*
 * The simulated Metal library. Devices are built from one snapshot (snapshots/README.md) per process, with a class
 * layout like Apple's: a private base class `_MTLDevice` implements the queries, and each device's concrete class
 * (named as in the snapshot, e.g. `AppleParavirtDevice`) is created at run time as its subclass. A device whose
 * snapshot says `simulation.methodsOnConcreteClass` gets its own copies of the hooked queries (`name` included), so
 * hook tests meet both an inherited and an own method. `architecture` is added only where the snapshot records one, the
 * way a pre-macOS-14 device does not respond to it. A device whose snapshot names `simulation.defaultObjectClass` is
 * handed out by MTLCreateSystemDefaultDevice() as a second object of that class (as a validation or capture layer wraps
 * the default device), while MTLCopyAllDevices() lists the plain one.
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
bool gLoaded = false;
SimHost gHost;
std::vector<SimDevice> gDevices;
size_t gDefaultDevice = 0;
std::atomic<unsigned long> gCreateDefaultCalls{0};
std::atomic<unsigned long> gCopyAllCalls{0};
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
  // The TypeScript layer validates snapshots before native code sees them, so this only fires for a hand-run consumer.
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

void hostFrom(NSDictionary *snapshot, NSDictionary *h) {
  stringAt(snapshot, @"id", &gHost.snapshotId);
  stringAt(h, @"platform", &gHost.platform);
  gHost.hasOsVersion = stringAt(h, @"osVersion", &gHost.osVersion);
  gHost.hasOsBuild = stringAt(h, @"osBuild", &gHost.osBuild);
  gHost.hasModel = stringAt(h, @"model", &gHost.model);
  gHost.hasArch = stringAt(h, @"arch", &gHost.arch);
  gHost.hasCpuBrand = stringAt(h, @"cpuBrand", &gHost.cpuBrand);
  id vm = [h objectForKey:@"isVirtualMachine"];
  if ([vm isKindOfClass:[NSNumber class]]) gHost.isVirtualMachine = [(NSNumber *)vm boolValue] ? 1 : 0;
  id memory = [h objectForKey:@"memoryBytes"];
  if ([memory isKindOfClass:[NSNumber class]]) {
    gHost.hasMemoryBytes = true;
    gHost.memoryBytes = [(NSNumber *)memory unsignedLongLongValue];
  }
  id translated = [h objectForKey:@"translated"];
  if ([translated isKindOfClass:[NSNumber class]]) gHost.translated = [(NSNumber *)translated boolValue] ? 1 : 0;
}

bool createDeviceObjects();

void forgetSnapshot() {
  for (SimDevice &dev : gDevices) {
    [dev.object release];
    [dev.defaultObject release];
  }
  gDevices.clear();
  gHost = SimHost();
  gDefaultDevice = 0;
  gLoaded = false;
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
  hostFrom(snapshot, dictAt(snapshot, @"host"));
  id devices = [snapshot objectForKey:@"devices"];
  if ([devices isKindOfClass:[NSArray class]]) {
    for (id d in (NSArray *)devices) {
      if (![d isKindOfClass:[NSDictionary class]]) continue;
      gDevices.push_back(deviceFrom((NSDictionary *)d));
      simComputeReadDevice(gDevices.size() - 1, (NSDictionary *)d, gHost.hasOsVersion ? gHost.osVersion.c_str() : NULL);
    }
  }
  gDefaultDevice = (size_t)u64At(snapshot, @"defaultDevice");
  if (gDefaultDevice >= gDevices.size()) gDefaultDevice = 0;
  gLoaded = true;
  if (!createDeviceObjects()) {
    forgetSnapshot();
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

void loadSnapshot() {
  const char *selector = getenv("METAL_CAP_SHIM_SIM_SNAPSHOT");
  if (selector == NULL || *selector == '\0') return;
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  std::string path = snapshotPath(selector);
  std::string problem;
  NSData *data = readRegularFile(path, &problem);
  if (data == nil) {
    simFail("cannot read snapshot " + path + ": " + problem);
  } else {
    loadSnapshotData(data, path);
  }
  [pool release];
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
  return gDevices[((_MTLDevice *)self)->_simIndex];
}

static std::atomic<long> gThreadgroupCalls[64];

static NSUInteger simThreadgroupMemory(id self) {
  size_t index = ((_MTLDevice *)self)->_simIndex;
  const SimDevice &dev = gDevices[index];
  long calls = index < 64 ? gThreadgroupCalls[index].fetch_add(1) + 1 : 0;
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

// Nil, after saying why, for a class the simulation cannot make: a name some other class already has (its instances
// have no _simIndex), a name the runtime refuses, or a `subclassOf` chain that loops back (`depth` counts the links).
Class concreteClassFor(const SimDevice &dev, size_t depth = 0) {
  Class existing = objc_getClass(dev.className.c_str());
  if (existing != Nil) {
    if (isSimDeviceClass(existing)) return existing;
    simFail("className '" + dev.className + "' is an existing class that is not a simulated device");
    return Nil;
  }
  Class base = [_MTLDevice class];
  if (!dev.lacks.empty()) {
    Class cls = allocateClass([_MTLPartialDevice class], dev.className);
    if (cls == Nil) return Nil;
    for (const char *name : kQuerySelectors) {
      if (dev.lacks == name) continue;
      SEL sel = sel_registerName(name);
      class_addMethod(cls, sel, class_getMethodImplementation(base, sel), typesOf(base, sel));
    }
    objc_registerClassPair(cls);
    return cls;
  }
  if (!dev.subclassOf.empty()) {
    if (depth >= gDevices.size()) {
      simFail("simulation.subclassOf of '" + dev.className + "' loops back to itself");
      return Nil;
    }
    for (const SimDevice &other : gDevices) {
      if (other.className != dev.subclassOf) continue;
      base = concreteClassFor(other, depth + 1);
      if (base == Nil) return Nil;
    }
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
  if (dev.hasArchitecture) {
    std::string types = std::string(@encode(id)) + @encode(id) + @encode(SEL);
    class_addMethod(cls, @selector(architecture), (IMP)simArchitecture, types.c_str());
  }
  objc_registerClassPair(cls);
  return cls;
}

// A wrapper-like class over the same simulated device: inherits every query from _MTLDevice. Nil, after saying why,
// for a name that some class other than a simulated device already has.
Class defaultObjectClassFor(const SimDevice &dev) {
  Class existing = objc_getClass(dev.defaultObjectClass.c_str());
  if (existing != Nil) {
    if (isSimDeviceClass(existing)) return existing;
    simFail("defaultObjectClass '" + dev.defaultObjectClass + "' is an existing class that is not a simulated device");
    return Nil;
  }
  Class cls = allocateClass([_MTLDevice class], dev.defaultObjectClass);
  if (cls == Nil) return Nil;
  if (dev.hasArchitecture) {
    std::string types = std::string(@encode(id)) + @encode(id) + @encode(SEL);
    class_addMethod(cls, @selector(architecture), (IMP)simArchitecture, types.c_str());
  }
  objc_registerClassPair(cls);
  return cls;
}

bool createDeviceObjects() {
  std::vector<Class> classes, defaultClasses;
  for (const SimDevice &dev : gDevices) {
    Class cls = concreteClassFor(dev);
    Class defaultCls = dev.defaultObjectClass.empty() ? Nil : defaultObjectClassFor(dev);
    if (cls == Nil || (!dev.defaultObjectClass.empty() && defaultCls == Nil)) return false;
    classes.push_back(cls);
    defaultClasses.push_back(defaultCls);
  }
  for (size_t i = 0; i < gDevices.size(); i++) {
    _MTLDevice *object = (_MTLDevice *)[[classes[i] alloc] init];
    object->_simIndex = i;
    gDevices[i].object = object;
    if (defaultClasses[i] != Nil) {
      _MTLDevice *wrapper = (_MTLDevice *)[[defaultClasses[i] alloc] init];
      wrapper->_simIndex = i;
      gDevices[i].defaultObject = wrapper;
    }
    simComputeAttachDevice(object, i);
  }
  return true;
}

}  // namespace

MTL_EXTERN id<MTLDevice> MTLCreateSystemDefaultDevice(void) {
  gCreateDefaultCalls.fetch_add(1);
  ensureLoaded();
  if (gDevices.empty()) return nil;
  const SimDevice &dev = gDevices[gDefaultDevice];
  return [(dev.defaultObject != nil ? dev.defaultObject : dev.object) retain];
}

MTL_EXTERN NSArray<id<MTLDevice>> *MTLCopyAllDevices(void) {
  gCopyAllCalls.fetch_add(1);
  ensureLoaded();
  NSMutableArray *all = [[NSMutableArray alloc] initWithCapacity:gDevices.size()];
  for (const SimDevice &dev : gDevices) [all addObject:dev.object];
  return all;
}

extern "C" int MTLSimGetHostFacts(MTLSimHostFacts *out) {
  ensureLoaded();
  memset(out, 0, sizeof(*out));
  out->isVirtualMachine = -1;
  out->translated = -1;
  if (!gLoaded) return 0;
  out->snapshotId = gHost.snapshotId.c_str();
  out->platform = gHost.platform.c_str();
  out->osVersion = gHost.hasOsVersion ? gHost.osVersion.c_str() : NULL;
  out->osBuild = gHost.hasOsBuild ? gHost.osBuild.c_str() : NULL;
  out->model = gHost.hasModel ? gHost.model.c_str() : NULL;
  out->arch = gHost.hasArch ? gHost.arch.c_str() : NULL;
  out->isVirtualMachine = gHost.isVirtualMachine;
  out->hasMemoryBytes = gHost.hasMemoryBytes ? 1 : 0;
  out->memoryBytes = gHost.memoryBytes;
  out->translated = gHost.translated;
  out->cpuBrand = gHost.hasCpuBrand ? gHost.cpuBrand.c_str() : NULL;
  return 1;
}

extern "C" void MTLSimGetDeviceCalls(MTLSimDeviceCalls *out) {
  out->createSystemDefaultDevice = gCreateDefaultCalls.load();
  out->copyAllDevices = gCopyAllCalls.load();
}
