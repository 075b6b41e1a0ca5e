/* Metal classes ggml-metal's device code links against but does not use while it initialises: GCC's runtime needs
   each messaged class to exist at link time (__objc_class_name_X). They have no methods, so a call from outside
   initialisation raises "unrecognized selector" instead of doing something the simulation cannot stand behind. */
#import <Metal/Metal.h>

@implementation MTLFunctionConstantValues
@end

@implementation MTLCaptureManager
@end

@implementation MTLCaptureDescriptor
@end
