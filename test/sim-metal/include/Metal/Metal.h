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

static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  MTLSize size = {width, height, depth};
  return size;
}

/* ---- The compute subset doctor uses (MTLResource.h, MTLLibrary.h, MTLCommandBuffer.h, …) ---- */

typedef NS_OPTIONS(NSUInteger, MTLResourceOptions) {
  MTLResourceCPUCacheModeDefaultCache = 0,
  MTLResourceCPUCacheModeWriteCombined = 1,
  MTLResourceStorageModeShared = 0 << 4,
  MTLResourceStorageModeManaged = 1 << 4,
  MTLResourceStorageModePrivate = 2 << 4,
  MTLResourceHazardTrackingModeDefault = 0 << 8,
  MTLResourceHazardTrackingModeUntracked = 1 << 8,
  MTLResourceHazardTrackingModeTracked = 2 << 8,
};

typedef NS_ENUM(NSUInteger, MTLStorageMode) {
  MTLStorageModeShared = 0,
  MTLStorageModeManaged = 1,
  MTLStorageModePrivate = 2,
};

/* As in the macOS 12 SDK the project builds against: 3.x versions are set by number (see
 * src-native/doctor/doctor_kernels.h). */
typedef NS_ENUM(NSUInteger, MTLLanguageVersion) {
  MTLLanguageVersion1_1 = (1 << 16) + 1,
  MTLLanguageVersion1_2 = (1 << 16) + 2,
  MTLLanguageVersion2_0 = (2 << 16),
  MTLLanguageVersion2_1 = (2 << 16) + 1,
  MTLLanguageVersion2_2 = (2 << 16) + 2,
  MTLLanguageVersion2_3 = (2 << 16) + 3,
  MTLLanguageVersion2_4 = (2 << 16) + 4,
};

typedef NS_ENUM(NSUInteger, MTLLibraryError) {
  MTLLibraryErrorUnsupported = 1,
  MTLLibraryErrorInternal = 2,
  MTLLibraryErrorCompileFailure = 3,
  MTLLibraryErrorCompileWarning = 4,
  MTLLibraryErrorFunctionNotFound = 5,
  MTLLibraryErrorFileNotFound = 6,
};

typedef NS_ENUM(NSUInteger, MTLCommandBufferStatus) {
  MTLCommandBufferStatusNotEnqueued = 0,
  MTLCommandBufferStatusEnqueued = 1,
  MTLCommandBufferStatusCommitted = 2,
  MTLCommandBufferStatusScheduled = 3,
  MTLCommandBufferStatusCompleted = 4,
  MTLCommandBufferStatusError = 5,
};

typedef NS_ENUM(NSUInteger, MTLCommandBufferError) {
  MTLCommandBufferErrorNone = 0,
  MTLCommandBufferErrorInternal = 1,
  MTLCommandBufferErrorTimeout = 2,
  MTLCommandBufferErrorPageFault = 3,
  MTLCommandBufferErrorAccessRevoked = 4,
  MTLCommandBufferErrorNotPermitted = 7,
  MTLCommandBufferErrorOutOfMemory = 8,
  MTLCommandBufferErrorInvalidResource = 9,
  MTLCommandBufferErrorDeviceRemoved = 11,
};

MTL_EXTERN NSString *const MTLLibraryErrorDomain;
MTL_EXTERN NSString *const MTLCommandBufferErrorDomain;

/* Apple's parameter is a block: doctor's NoCopy probe passes one that unmaps its file, which the simulation calls when
   the buffer is released. */
#if defined(__BLOCKS__)
typedef void (^MTLNewBufferDeallocator)(void *pointer, NSUInteger length);
#else
typedef id MTLNewBufferDeallocator;
#endif

@protocol MTLDevice;
@protocol MTLHeap;

@protocol MTLResource <NSObject>
@property (readonly) id<MTLDevice> device;
/* The heap the resource was placed in; nil for a resource made by the device. */
@property (readonly) id<MTLHeap> heap;
@end

@protocol MTLBuffer <MTLResource>
@property (readonly) NSUInteger length;
- (void *)contents;
@end

@protocol MTLBuffer;

/* MTLHeap.h: a descriptor (a class cluster here, so Apple's header stays free of ivars) and the heap. */
@interface MTLHeapDescriptor : NSObject <NSCopying>
@property (readwrite, nonatomic) NSUInteger size;
@property (readwrite, nonatomic) MTLStorageMode storageMode;
@property (readwrite, nonatomic) MTLResourceOptions resourceOptions;
@end

@protocol MTLHeap <NSObject>
@property (readonly) id<MTLDevice> device;
@property (readonly) NSUInteger size;
@property (readonly) NSUInteger usedSize;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
@end

@protocol MTLFunction <NSObject>
@property (readonly) NSString *name;
@end

@protocol MTLLibrary <NSObject>
@property (readonly) NSArray<NSString *> *functionNames;
- (id<MTLFunction>)newFunctionWithName:(NSString *)functionName;
@end

@interface MTLCompileOptions : NSObject <NSCopying>
@property (readwrite, nonatomic) BOOL fastMathEnabled;
@property (readwrite, nonatomic) MTLLanguageVersion languageVersion;
@end

@protocol MTLComputePipelineState <NSObject>
@property (readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property (readonly) NSUInteger threadExecutionWidth;
@property (readonly) NSUInteger staticThreadgroupMemoryLength;
@end

@protocol MTLCommandEncoder <NSObject>
- (void)endEncoding;
@end

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void *)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
@end

@protocol MTLCommandBuffer <NSObject>
@property (readonly) MTLCommandBufferStatus status;
@property (readonly) NSError *error;
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (void)commit;
@end

@protocol MTLCommandQueue <NSObject>
- (id<MTLCommandBuffer>)commandBuffer;
@end

/* Completion handlers of the asynchronous compile calls (MTLDevice.h): blocks, as Apple's clang compiles them by
   default; the Linux build passes -fblocks and links the BlocksRuntime. */
typedef void (^MTLNewLibraryCompletionHandler)(id<MTLLibrary> library, NSError *error);
typedef void (^MTLNewComputePipelineStateCompletionHandler)(id<MTLComputePipelineState> computePipelineState,
                                                            NSError *error);

@interface MTLArchitecture : NSObject
@property (readonly) NSString *name;
@end

@protocol MTLDevice <NSObject>
@property (readonly) NSString *name;
@property (readonly) uint64_t registryID;
@property (readonly) MTLSize maxThreadsPerThreadgroup;
@property (readonly) uint64_t recommendedMaxWorkingSetSize;
@property (readonly) NSUInteger maxThreadgroupMemoryLength;
@property (readonly) NSUInteger maxBufferLength;
@property (readonly) BOOL hasUnifiedMemory;
@property (readonly) MTLDeviceLocation location;
@property (readonly) MTLArchitecture *architecture;
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily;
/* Required in Apple's header. Optional here only because the simulated device classes receive them at run time
   (test/sim-metal/src/SimCompute.mm), which the compiler cannot see. */
@optional
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLLibrary>)newLibraryWithSource:(NSString *)source options:(MTLCompileOptions *)options error:(NSError **)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                                             error:(NSError **)error;
- (void)newLibraryWithSource:(NSString *)source
                     options:(MTLCompileOptions *)options
           completionHandler:(MTLNewLibraryCompletionHandler)completionHandler;
- (void)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                          completionHandler:(MTLNewComputePipelineStateCompletionHandler)completionHandler;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytes:(const void *)pointer length:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void *)pointer
                                   length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:(MTLNewBufferDeallocator)deallocator;
- (id<MTLHeap>)newHeapWithDescriptor:(MTLHeapDescriptor *)descriptor;
/* Residency sets (macOS 15: newResidencySetWithDescriptor:error:, MTLResidencySetDescriptor, MTLResidencySet) are
   deliberately not declared: the project reaches them through run-time lookups only, as it must against the
   macOS 12 SDK, and a direct call then fails to compile here as it would there. */
@end

/* Both follow Apple's Create/Copy rule: the caller owns the result and releases it. */
MTL_EXTERN id<MTLDevice> MTLCreateSystemDefaultDevice(void);
MTL_EXTERN NSArray<id<MTLDevice>> *MTLCopyAllDevices(void);

#endif
