// The injector's trace at exit under ThreadSanitizer (scripts/build/build-sim.mjs --sanitize builds
// build/sanitize/inject_exit-tsan: this file, src-native/inject/inject.mm and the hook engine, linked to the simulated
// Metal). A thread asks for the devices, so the injector patches their classes and records them, then sleeps; the main
// thread never touches Metal and exits while that thread is still alive, so the injector's atexit handler writes the
// trace with no other synchronisation between the two threads than the injector's own lock. Without that lock,
// ThreadSanitizer reports the list of patched classes as raced. Run with METAL_CAP_SHIM_PROFILE_NATIVE,
// METAL_CAP_SHIM_TRACE_DIR and METAL_CAP_SHIM_SIM_SNAPSHOT set (test/sanitizers/engine.test.ts).
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <chrono>
#include <cstdlib>
#include <thread>

int main() {
  std::thread patcher([] {
    @autoreleasepool {
      NSArray *devices = MTLCopyAllDevices();
      [devices release];
    }
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  });
  patcher.detach();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  exit(0);
}
