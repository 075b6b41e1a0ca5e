/*
 * The Metal API that llama.cpp's ggml-metal sources name, beyond the simulated Metal's own header
 * (test/sim-metal/include/Metal/Metal.h), with Apple's names, types and values (MTLDevice.h, MTLCommandBuffer.h,
 * MTLBlitCommandEncoder.h, MTLEvent.h, MTLResidencySet.h, MTLFunctionConstantValues.h, MTLArgument.h,
 * MTLCaptureManager.h). Declarations only: they let the sources compile. What ggml calls while it initialises is
 * implemented by the simulated Metal; anything else would raise "unrecognized selector", which the harness reports.
 */
/* The simulated header's protocols are declared under other names here, so that the protocols below can refine them
   under Apple's names: an Objective-C protocol cannot be reopened. */
#define MTLDevice MCSSimMTLDevice
#define MTLCommandQueue MCSSimMTLCommandQueue
#define MTLCommandBuffer MCSSimMTLCommandBuffer
#define MTLComputeCommandEncoder MCSSimMTLComputeCommandEncoder
#define MTLLibrary MCSSimMTLLibrary
#define MTLBuffer MCSSimMTLBuffer
#include_next <Metal/Metal.h>
#undef MTLDevice
#undef MTLCommandQueue
#undef MTLCommandBuffer
#undef MTLComputeCommandEncoder
#undef MTLLibrary
#undef MTLBuffer

#ifndef MCS_CONFORMANCE_METAL_H
#define MCS_CONFORMANCE_METAL_H

@protocol MTLDevice;

typedef NS_ENUM(NSUInteger, MTLDataType) {
  MTLDataTypeNone = 0,
  MTLDataTypeFloat = 3,
  MTLDataTypeHalf = 16,
  MTLDataTypeInt = 29,
  MTLDataTypeUInt = 33,
  MTLDataTypeShort = 37,
  MTLDataTypeUShort = 41,
  MTLDataTypeChar = 45,
  MTLDataTypeUChar = 49,
  MTLDataTypeBool = 53,
};

typedef NS_ENUM(NSUInteger, MTLDispatchType) {
  MTLDispatchTypeSerial = 0,
  MTLDispatchTypeConcurrent = 1,
};

typedef NS_OPTIONS(NSUInteger, MTLBarrierScope) {
  MTLBarrierScopeBuffers = 1 << 0,
  MTLBarrierScopeTextures = 1 << 1,
  MTLBarrierScopeRenderTargets = 1 << 2,
};

typedef NS_OPTIONS(NSUInteger, MTLResourceUsage) {
  MTLResourceUsageRead = 1 << 0,
  MTLResourceUsageWrite = 1 << 1,
};

typedef NS_ENUM(NSInteger, MTLCaptureDestination) {
  MTLCaptureDestinationDeveloperTools = 1,
  MTLCaptureDestinationGPUTraceDocument = 2,
};

@interface MTLFunctionConstantValues : NSObject <NSCopying>
- (void)setConstantValue:(const void *)value type:(MTLDataType)type atIndex:(NSUInteger)index;
@end

@interface MTLCompileOptions (MCSConformance)
@property (readwrite, copy, nonatomic) NSDictionary<NSString *, NSObject *> *preprocessorMacros;
@end

@protocol MTLEvent <NSObject>
@end

@protocol MTLSharedEvent <MTLEvent>
@property uint64_t signaledValue;
- (BOOL)waitUntilSignaledValue:(uint64_t)value timeoutMS:(uint64_t)milliseconds;
@end

@protocol MTLAllocation <NSObject>
@end

/* Every MTLBuffer is an MTLAllocation (macOS 15). gpuAddress: MTLResource's (macOS 13), which b6673 reads. */
@protocol MTLBuffer <MCSSimMTLBuffer, MTLAllocation>
@property (readonly) uint64_t gpuAddress;
@end

@protocol MTLResidencySet <NSObject>
@property (readonly) NSUInteger allocationCount;
- (void)addAllocation:(id<MTLAllocation>)allocation;
- (void)removeAllocation:(id<MTLAllocation>)allocation;
- (void)removeAllAllocations;
- (void)commit;
- (void)requestResidency;
- (void)endResidency;
@end

@interface MTLResidencySetDescriptor : NSObject <NSCopying>
@property (copy, atomic) NSString *label;
@property (readwrite, nonatomic) NSUInteger initialCapacity;
@end

@protocol MTLBlitCommandEncoder <MTLCommandEncoder>
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value;
- (void)copyFromBuffer:(id<MTLBuffer>)sourceBuffer
          sourceOffset:(NSUInteger)sourceOffset
              toBuffer:(id<MTLBuffer>)destinationBuffer
     destinationOffset:(NSUInteger)destinationOffset
                  size:(NSUInteger)size;
@end

@protocol MTLCaptureScope <NSObject>
- (void)beginScope;
- (void)endScope;
@end

@interface MTLCaptureDescriptor : NSObject
@property (strong) id captureObject;
@property (assign) MTLCaptureDestination destination;
@property (copy) NSURL *outputURL;
@end

@interface MTLCaptureManager : NSObject
+ (MTLCaptureManager *)sharedCaptureManager;
- (BOOL)startCaptureWithDescriptor:(MTLCaptureDescriptor *)descriptor error:(NSError **)error;
- (void)stopCapture;
@property (readonly) BOOL isCapturing;
- (id<MTLCaptureScope>)newCaptureScopeWithDevice:(id<MTLDevice>)device;
@end

@protocol MTLFunction;

@protocol MTLLibrary <MCSSimMTLLibrary>
- (id<MTLFunction>)newFunctionWithName:(NSString *)name
                        constantValues:(MTLFunctionConstantValues *)constantValues
                                 error:(NSError **)error;
@end

@protocol MTLComputeCommandEncoder <MCSSimMTLComputeCommandEncoder>
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope;
- (void)pushDebugGroup:(NSString *)string;
- (void)popDebugGroup;
- (void)useResource:(id<MTLResource>)resource usage:(MTLResourceUsage)usage;
@end

@protocol MTLCommandBuffer;
typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);

@protocol MTLCommandBuffer <MCSSimMTLCommandBuffer>
@property (copy, atomic) NSString *label;
- (id<MTLBlitCommandEncoder>)blitCommandEncoder;
- (id<MTLComputeCommandEncoder>)computeCommandEncoderWithDispatchType:(MTLDispatchType)dispatchType;
- (void)enqueue;
- (void)waitUntilCompleted;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (void)encodeSignalEvent:(id<MTLEvent>)event value:(uint64_t)value;
- (void)encodeWaitForEvent:(id<MTLEvent>)event value:(uint64_t)value;
- (void)useResidencySet:(id<MTLResidencySet>)residencySet;
@end

@protocol MTLCommandQueue <MCSSimMTLCommandQueue>
- (id<MTLCommandBuffer>)commandBuffer;
- (id<MTLCommandBuffer>)commandBufferWithUnretainedReferences;
- (void)addResidencySet:(id<MTLResidencySet>)residencySet;
@end

@protocol MTLDevice <MCSSimMTLDevice>
@property (readonly) NSUInteger currentAllocatedSize;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLLibrary>)newLibraryWithSource:(NSString *)source options:(MTLCompileOptions *)options error:(NSError **)error;
- (id<MTLLibrary>)newLibraryWithURL:(NSURL *)url error:(NSError **)error;
- (id<MTLResidencySet>)newResidencySetWithDescriptor:(MTLResidencySetDescriptor *)descriptor error:(NSError **)error;
- (id<MTLEvent>)newEvent;
- (id<MTLSharedEvent>)newSharedEvent;
@end

#endif
