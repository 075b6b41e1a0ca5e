// The injector's trace at exit under ThreadSanitizer (scripts/build/build-sim.mjs --sanitize builds
// build/sanitize/inject_exit-tsan: this file, src-native/inject/inject.mm and the hook engine, linked to the simulated
// Metal). A thread asks for the devices, so the injector patches their classes and records them, then sleeps; the main
// thread never touches Metal and exits while that thread is still alive, so the injector's atexit handler writes the
// trace with no other synchronisation between the two threads than the injector's own lock. Without that lock,
// ThreadSanitizer reports the list of patched classes as raced. The main thread waits for the patching to be done
// through a relaxed atomic, which orders nothing (to ThreadSanitizer neither): a fixed wait was too short on a
// loaded machine, where the run then wrote no trace at all. Run with METAL_CAP_SHIM_PROFILE_NATIVE,
// METAL_CAP_SHIM_TRACE_DIR and METAL_CAP_SHIM_SIM_SNAPSHOT set (test/sanitizers/engine.test.ts).
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace {
std::atomic<bool> gPatched{false};
}

int main() {
  std::thread patcher([] {
    @autoreleasepool {
      NSArray *devices = MTLCopyAllDevices();
      [devices release];
    }
    gPatched.store(true, std::memory_order_relaxed);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  });
  patcher.detach();
  // At most a minute: a run that never patched exits all the same, and the test finds no trace.
  for (int i = 0; i < 6000 && !gPatched.load(std::memory_order_relaxed); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  exit(0);
}
