/* Forced first include (-include) of every llama.cpp source the conformance harness compiles. On a Mac, Foundation
   brings <TargetConditionals.h>, libdispatch and the Mach headers; GNUstep's Foundation brings none of them. The
   build configuration comes from the build script: MCS_TARGET_X86_64 (an x86_64 build) and MCS_MACOS_SDK (the SDK's
   __MAC_OS_X_VERSION_MAX_ALLOWED). */
#ifndef MCS_CONFORMANCE_PRELUDE_H
#define MCS_CONFORMANCE_PRELUDE_H

#define TARGET_OS_OSX 1
#define TARGET_OS_MAC 1
#define TARGET_OS_IOS 0
#define TARGET_OS_TV 0
#define TARGET_OS_WATCH 0
#define TARGET_OS_VISION 0
#define TARGET_OS_IPHONE 0
#if MCS_TARGET_X86_64
#define TARGET_CPU_X86_64 1
#define TARGET_CPU_ARM64 0
#else
#define TARGET_CPU_X86_64 0
#define TARGET_CPU_ARM64 1
#endif
#define __MAC_OS_X_VERSION_MAX_ALLOWED MCS_MACOS_SDK

#include <unistd.h>

#if defined(__OBJC__) || defined(__BLOCKS__)
#include <dispatch/dispatch.h>
#endif
#include <mach/mach.h>

#ifdef __OBJC__
#import <Foundation/Foundation.h>
/* Apple's nil is a null pointer of no class (usr/include/sys/_types.h), which C pointers take without a cast; GNUstep's
   is (id)0, which ggml's `getenv(...) == nil` and `rsets = nil` would turn into warnings. */
#undef nil
#define nil ((void *)0)
/* Apple Foundation API that GNUstep lacks; ggml reaches it only for a symlinked default.metallib next to the binary. */
@interface NSFileManager (MCSConformance)
- (NSString *)destinationOfSymbolicLinkAtPath:(NSString *)path error:(NSError **)error;
@end
#endif

#endif
