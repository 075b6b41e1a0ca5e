// libFuzzer target: the simulated Metal's snapshot loader (test/sim-metal/src/SimMetal.mm), which builds device
// classes from a snapshot's JSON. The TypeScript side validates snapshots before a probe, but a hand-run consumer
// (test/native/consumer.mm, the flags script's users) hands the loader any file: each input must load as devices
// that answer every query they implement, or load nothing and say why, never crash.
// Built and run by scripts/measure/native-coverage.mjs (clang-14 -fsanitize=fuzzer,address,undefined). The library is
// compiled into this file so the harness can load from bytes and start over between inputs.
//
// An input is either JSON, read as a snapshot file (first byte below 0x80, as '{' is), or, from a first byte of 0x80
// up, the recipe for a snapshot the harness writes itself: byte mutations rarely keep JSON valid, and the device
// class layout (class names, `simulation.subclassOf`, `lacks`) is where the loader does more than copy values.
#define MCS_SIM_SNAPSHOT_DIR "/nonexistent"
#include "../sim-metal/src/SimMetal.mm"

#include <fuzzer/FuzzedDataProvider.h>

namespace {

// Classes cannot be removed from the runtime, so names are drawn from a small set: each is new the first time it
// is used and an existing class after that, and the set includes names of classes that are no device at all.
const char *const kClassNames[] = {"DevA",
                                   "DevB",
                                   "DevC",
                                   "DevD",
                                   "DevE",
                                   "DevF",
                                   "DevG",
                                   "DevH",
                                   "NSObject",
                                   "NSString",
                                   "_MTLDevice",
                                   "_MTLPartialDevice",
                                   "MTLArchitecture",
                                   "",
                                   "Dev A"};
const char *const kLacks[] = {"supportsFamily:", "maxThreadgroupMemoryLength", "recommendedMaxWorkingSetSize", "name",
                              "bogus"};

id fuzzNumber(FuzzedDataProvider &in) {
  switch (in.ConsumeIntegralInRange<int>(0, 4)) {
    case 0:
      return [NSNumber numberWithUnsignedLongLong:in.ConsumeIntegral<uint64_t>()];
    case 1:
      return [NSNumber numberWithLongLong:in.ConsumeIntegral<int64_t>()];
    case 2:
      return [NSNumber numberWithDouble:in.ConsumeFloatingPoint<double>()];
    case 3:
      return [NSNumber numberWithBool:in.ConsumeBool()];
    default:
      return @"not a number";
  }
}

NSString *pick(FuzzedDataProvider &in, const char *const *names, size_t count) {
  return [NSString stringWithUTF8String:names[in.ConsumeIntegralInRange<size_t>(0, count - 1)]];
}

NSData *recipeSnapshot(FuzzedDataProvider &in) {
  NSMutableArray *devices = [NSMutableArray array];
  size_t count = in.ConsumeIntegralInRange<size_t>(0, 5);
  for (size_t i = 0; i < count; i++) {
    NSMutableDictionary *d = [NSMutableDictionary dictionary];
    [d setObject:@"Fuzzed GPU" forKey:@"name"];
    [d setObject:pick(in, kClassNames, sizeof(kClassNames) / sizeof(kClassNames[0])) forKey:@"className"];
    NSMutableDictionary *families = [NSMutableDictionary dictionary];
    for (const mcs::FamilyInfo &f : mcs::kFamilies) {
      [families setObject:[NSNumber numberWithBool:in.ConsumeBool()] forKey:[NSString stringWithUTF8String:f.key]];
    }
    [d setObject:families forKey:@"families"];
    for (NSString *key in
         @[ @"registryId", @"maxThreadgroupMemoryLength", @"recommendedMaxWorkingSetSize", @"maxBufferLength" ]) {
      [d setObject:fuzzNumber(in) forKey:key];
    }
    [d setObject:@{@"width" : fuzzNumber(in), @"height" : fuzzNumber(in), @"depth" : fuzzNumber(in)}
          forKey:@"maxThreadsPerThreadgroup"];
    [d setObject:fuzzNumber(in) forKey:@"hasUnifiedMemory"];
    [d setObject:pick(in, (const char *const[]){"builtIn", "slot", "external", "unspecified", "moon"}, 5)
          forKey:@"location"];
    if (in.ConsumeBool()) [d setObject:@"applegpu_g13s" forKey:@"architecture"];
    if (in.ConsumeBool()) {
      NSMutableDictionary *simulation = [NSMutableDictionary dictionary];
      [simulation setObject:[NSNumber numberWithBool:in.ConsumeBool()] forKey:@"methodsOnConcreteClass"];
      if (in.ConsumeBool()) [simulation setObject:pick(in, kLacks, sizeof(kLacks) / sizeof(kLacks[0])) forKey:@"lacks"];
      if (in.ConsumeBool()) [simulation setObject:fuzzNumber(in) forKey:@"driftAfter"];
      if (in.ConsumeBool()) {
        [simulation setObject:pick(in, kClassNames, sizeof(kClassNames) / sizeof(kClassNames[0])) forKey:@"subclassOf"];
      }
      if (in.ConsumeBool()) {
        [simulation setObject:pick(in, kClassNames, sizeof(kClassNames) / sizeof(kClassNames[0]))
                       forKey:@"defaultObjectClass"];
      }
      [d setObject:simulation forKey:@"simulation"];
    }
    [devices addObject:d];
  }
  NSDictionary *snapshot = @{
    @"id" : @"fuzzed",
    @"host" : @{
      @"platform" : @"darwin",
      @"osVersion" : pick(in, (const char *const[]){"26.5.2", "14.6", "13", "", "x"}, 5),
      @"isVirtualMachine" : fuzzNumber(in),
      @"memoryBytes" : fuzzNumber(in),
      @"translated" : fuzzNumber(in),
    },
    @"defaultDevice" : fuzzNumber(in),
    @"devices" : devices,
  };
  return [NSJSONSerialization dataWithJSONObject:snapshot options:0 error:NULL];
}

void ask(id<MTLDevice> device) {
  NSObject *object = (NSObject *)device;
  if ([object respondsToSelector:@selector(name)]) (void)[[device name] length];
  if ([object respondsToSelector:@selector(supportsFamily:)]) {
    for (const mcs::FamilyInfo &f : mcs::kFamilies) (void)[device supportsFamily:(MTLGPUFamily)f.value];
    (void)[device supportsFamily:(MTLGPUFamily)0];
  }
  if ([object respondsToSelector:@selector(maxThreadgroupMemoryLength)]) {
    for (int i = 0; i < 3; i++) (void)device.maxThreadgroupMemoryLength;
  }
  if ([object respondsToSelector:@selector(recommendedMaxWorkingSetSize)]) (void)device.recommendedMaxWorkingSetSize;
  if ([object respondsToSelector:@selector(maxThreadsPerThreadgroup)]) (void)device.maxThreadsPerThreadgroup;
  if ([object respondsToSelector:@selector(maxBufferLength)]) (void)device.maxBufferLength;
  if ([object respondsToSelector:@selector(hasUnifiedMemory)]) (void)device.hasUnifiedMemory;
  if ([object respondsToSelector:@selector(location)]) (void)device.location;
  if ([object respondsToSelector:@selector(registryID)]) (void)device.registryID;
  if ([object respondsToSelector:@selector(architecture)]) (void)[[[device architecture] name] length];
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Use up the once-per-process load from the environment, so only the harness's loads fill the library.
  unsetenv("METAL_CAP_SHIM_SIM_SNAPSHOT");
  ensureLoaded();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  forgetSnapshot();
  NSData *bytes;
  if (size > 0 && data[0] >= 0x80) {
    FuzzedDataProvider in(data + 1, size - 1);
    bytes = recipeSnapshot(in);
  } else {
    bytes = [NSData dataWithBytes:data length:size];
  }
  bool loaded = loadSnapshotData(bytes, "fuzz input");
  if (!loaded && !gDevices.empty()) abort();  // a refused snapshot must leave no device behind
  MTLSimHostFacts facts;
  MTLSimGetHostFacts(&facts);
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  if (device != nil) ask(device);
  [device release];
  NSArray *all = MTLCopyAllDevices();
  for (id d in all) ask((id<MTLDevice>)d);
  [all release];
  [pool release];
  return 0;
}
