// The simulated Metal's blit fill, as llama.cpp's device initialisation encodes it: a buffer of 16 bytes, one fill
// per command buffer, then what the CPU reads back. Prints one JSON line per range given as `location:length`. The
// blit encoder is declared here, as the conformance harness declares it, since the simulated Metal.h has none.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

@protocol BlitFillEncoder <NSObject>
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value;
- (void)endEncoding;
@end

@protocol BlitCommandBuffer <MTLCommandBuffer>
- (id<BlitFillEncoder>)blitCommandEncoder;
@end

int main(int argc, char **argv) {
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  if (device == nil) {
    fprintf(stderr, "no device\n");
    return 1;
  }
  id<MTLCommandQueue> queue = [device newCommandQueue];
  for (int i = 1; i < argc; i++) {
    unsigned long location = 0, length = 0;
    if (sscanf(argv[i], "%lu:%lu", &location, &length) != 2) return 2;
    id<MTLBuffer> buffer = [device newBufferWithLength:16 options:MTLResourceStorageModeShared];
    id<BlitCommandBuffer> cb = (id<BlitCommandBuffer>)[queue commandBuffer];
    id<BlitFillEncoder> blit = [cb blitCommandEncoder];
    [blit fillBuffer:buffer range:NSMakeRange(location, length) value:0xAB];
    [blit endEncoding];
    [cb commit];
    while ([cb status] == MTLCommandBufferStatusCommitted) usleep(1000);
    const uint8_t *bytes = static_cast<const uint8_t *>([buffer contents]);
    printf("{\"status\":%lu,\"error\":", (unsigned long)[cb status]);
    if ([cb error] == nil)
      printf("null");
    else
      printf("\"%s\"", [[[cb error] localizedDescription] UTF8String]);
    printf(",\"bytes\":[");
    for (int b = 0; b < 16; b++) printf("%s%u", b ? "," : "", bytes[b]);
    printf("]}\n");
    [buffer release];
  }
  [queue release];
  [device release];
  [pool release];
  return 0;
}
