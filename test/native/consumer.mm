// A program written only against Apple's documented Metal API: it includes <Metal/Metal.h>, asks the default device
// (or all devices with --all) and prints its answers as JSON. The tests compile it with test/sim-metal/flags on
// Linux, unchanged, and run it plainly and under `metal-cap-shim exec`.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <cstdio>
#include <cstring>

static void printDevice(id<MTLDevice> device, bool last) {
  printf("{\"name\":\"%s\",\"families\":{", [[device name] UTF8String]);
  const long families[] = {1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010,
                           2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002};
  for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
    printf("%s\"%ld\":%s", i ? "," : "", families[i],
           [device supportsFamily:(MTLGPUFamily)families[i]] ? "true" : "false");
  }
  printf("},\"maxThreadgroupMemoryLength\":%lu,\"recommendedMaxWorkingSetSize\":%llu,\"hasUnifiedMemory\":%s}%s",
         (unsigned long)device.maxThreadgroupMemoryLength, (unsigned long long)device.recommendedMaxWorkingSetSize,
         device.hasUnifiedMemory ? "true" : "false", last ? "" : ",");
}

int main(int argc, char **argv) {
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  bool all = argc > 1 && strcmp(argv[1], "--all") == 0;
  printf("[");
  if (all) {
    NSArray *devices = MTLCopyAllDevices();
    for (NSUInteger i = 0; i < [devices count]; i++) printDevice([devices objectAtIndex:i], i + 1 == [devices count]);
    [devices release];
  } else {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (device != nil) printDevice(device, true);
    [device release];
  }
  printf("]\n");
  [pool release];
  return 0;
}
