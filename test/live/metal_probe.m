// A tiny Metal program written only against Apple's public API. test/live/live.test.ts compiles it on the macOS
// runner with
//   clang -fobjc-arc -framework Metal -framework Foundation test/live/metal_probe.m -o build/test/metal_probe
// runs it plainly (the stock answers) and under `metal-cap-shim exec` (the answers the injector gives), and compares
// both with what the addon reports in-process.
//
// Output, one line on stdout, nothing on stderr:
//   {"name":"…","families":{"1001":true,…,"5002":false},"maxThreadgroupMemoryLength":…,"recommendedMaxWorkingSetSize":…}
// (key order is whatever NSJSONSerialization picks; readers parse it)
// or `null` when MTLCreateSystemDefaultDevice() returns nil (some Intel runners have no Metal device); exit code 0.
//
// Families are asked by number, cast to MTLGPUFamily: Apple10 (1010) and Metal4 (5002) are missing from the Xcode 15
// and 16 SDKs, and Mac1 / MacCatalyst1–2 are deprecated names; asking a value the running OS does not know is answered
// NO, exactly as the addon asks it (src-native/engine/capabilities.mm).
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <stdio.h>

static const long kFamilies[] = {
    1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010,  // Apple1 … Apple10
    2001, 2002,                                                  // Mac1, Mac2
    3001, 3002, 3003,                                            // Common1 … Common3
    4001, 4002,                                                  // MacCatalyst1, MacCatalyst2
    5001, 5002,                                                  // Metal3, Metal4
};

int main(void) {
  @autoreleasepool {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (device == nil) {
      printf("null\n");
      return 0;
    }
    NSMutableDictionary *families = [NSMutableDictionary dictionary];
    for (size_t i = 0; i < sizeof(kFamilies) / sizeof(kFamilies[0]); i++) {
      BOOL yes = [device supportsFamily:(MTLGPUFamily)kFamilies[i]];
      // numberWithBool:, not @(yes): on x86_64 BOOL is a signed char and would serialise as 1 / 0.
      [families setObject:[NSNumber numberWithBool:yes] forKey:[NSString stringWithFormat:@"%ld", kFamilies[i]]];
    }
    NSDictionary *report = @{
      @"name" : device.name ?: @"",
      @"families" : families,
      @"maxThreadgroupMemoryLength" : @((unsigned long long)device.maxThreadgroupMemoryLength),
      @"recommendedMaxWorkingSetSize" : @((unsigned long long)device.recommendedMaxWorkingSetSize),
    };
    NSError *error = nil;
    NSData *json = [NSJSONSerialization dataWithJSONObject:report options:0 error:&error];
    if (json == nil) {
      fprintf(stderr, "metal_probe: cannot serialise the answers: %s\n", error.localizedDescription.UTF8String);
      return 1;
    }
    fwrite(json.bytes, 1, json.length, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  return 0;
}
