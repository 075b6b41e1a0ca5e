/*
 * Simulated Metal.framework for Linux tests: the subset of Apple's public Metal API that metal-cap-shim and its test
 * consumers use, with Apple's names, types and values (MTLDevice.h, MTLTypes.h). Device answers come from the
 * snapshot named by METAL_CAP_SHIM_SIM_SNAPSHOT (see test/sim-metal/README.md). Never shipped.
 */
#ifndef METAL_CAP_SHIM_SIM_METAL_H
#define METAL_CAP_SHIM_SIM_METAL_H

#import <Foundation/Foundation.h>
#include <stdint.h>

#ifdef __cplusplus
#define MTL_EXTERN extern "C"
#else
#define MTL_EXTERN extern
#endif

typedef NS_ENUM(NSInteger, MTLGPUFamily) {
  MTLGPUFamilyApple1 = 1001,
  MTLGPUFamilyApple2 = 1002,
  MTLGPUFamilyApple3 = 1003,
  MTLGPUFamilyApple4 = 1004,
  MTLGPUFamilyApple5 = 1005,
  MTLGPUFamilyApple6 = 1006,
  MTLGPUFamilyApple7 = 1007,
  MTLGPUFamilyApple8 = 1008,
  MTLGPUFamilyApple9 = 1009,
  MTLGPUFamilyApple10 = 1010,
  MTLGPUFamilyMac1 = 2001,
  MTLGPUFamilyMac2 = 2002,
  MTLGPUFamilyCommon1 = 3001,
  MTLGPUFamilyCommon2 = 3002,
  MTLGPUFamilyCommon3 = 3003,
  MTLGPUFamilyMacCatalyst1 = 4001,
  MTLGPUFamilyMacCatalyst2 = 4002,
  MTLGPUFamilyMetal3 = 5001,
  MTLGPUFamilyMetal4 = 5002,
};

typedef NS_ENUM(NSUInteger, MTLDeviceLocation) {
  MTLDeviceLocationBuiltIn = 0,
  MTLDeviceLocationSlot = 1,
  MTLDeviceLocationExternal = 2,
  MTLDeviceLocationUnspecified = NSUIntegerMax,
};

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;

@interface MTLArchitecture : NSObject
@property(readonly) NSString *name;
@end

@protocol MTLDevice <NSObject>
@property(readonly) NSString *name;
@property(readonly) uint64_t registryID;
@property(readonly) MTLSize maxThreadsPerThreadgroup;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
@property(readonly) NSUInteger maxThreadgroupMemoryLength;
@property(readonly) NSUInteger maxBufferLength;
@property(readonly) BOOL hasUnifiedMemory;
@property(readonly) MTLDeviceLocation location;
@property(readonly) MTLArchitecture *architecture;
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily;
@end

/* Both follow Apple's Create/Copy rule: the caller owns the result and releases it. */
MTL_EXTERN id<MTLDevice> MTLCreateSystemDefaultDevice(void);
MTL_EXTERN NSArray<id<MTLDevice>> *MTLCopyAllDevices(void);

#endif
