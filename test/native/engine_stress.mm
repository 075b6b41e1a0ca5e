// A stress run of the hook engine without Node, built with AddressSanitizer + UndefinedBehaviorSanitizer and,
// separately, ThreadSanitizer (scripts/build/build-sim.mjs --sanitize). Reader threads ask every device while the main
// thread installs, swaps and removes profiles; at the end every device must answer exactly as it did at the start,
// and the trace must count every query that threads coming and going made.
// The sanitizers see the engine's own memory and atomics; GCC's libobjc and GNUstep are not instrumented.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "../../src-native/engine/capabilities.h"
#include "../../src-native/engine/patch.h"
#include "../../src-native/engine/profile.h"

namespace {

std::atomic<bool> gRun{true};
std::atomic<unsigned long> gQueries{0};
std::atomic<int> gBadAnswers{0};

struct Expected {
  bool stockApple9;
  unsigned long stockThreadgroup;
  std::string stockName;
};

// Profile B answers this name (and traces it): readers see it or the stock name, never anything else.
const char *const kProfileName = "Apple M1";

void reader(std::vector<id> devices, std::vector<Expected> expected) {
  while (gRun.load(std::memory_order_relaxed)) {
    // The stock name is autoreleased: one pool per pass keeps the threads' memory flat.
    NSAutoreleasePool *pool = [NSAutoreleasePool new];
    for (size_t i = 0; i < devices.size(); i++) {
      id<MTLDevice> d = (id<MTLDevice>)devices[i];
      bool apple9 = [d supportsFamily:(MTLGPUFamily)1009] ? true : false;
      unsigned long tg = d.maxThreadgroupMemoryLength;
      std::string name = mcs::utf8Text([d name]);
      if (name != expected[i].stockName && name != kProfileName) gBadAnswers++;
      // Profiles in play: stock, A (Apple9, 65536, raise) and B (Apple7, 131072, raise).
      bool apple9Ok = apple9 == expected[i].stockApple9 || apple9;
      bool tgOk = tg == expected[i].stockThreadgroup || tg == 65536 || tg == 131072 ||
                  tg == std::max<unsigned long>(expected[i].stockThreadgroup, 65536) ||
                  tg == std::max<unsigned long>(expected[i].stockThreadgroup, 131072);
      if (!apple9Ok || !tgOk) gBadAnswers++;
      gQueries++;
    }
    [pool release];
  }
}

// Traced queries from threads that come and go (later waves take over the counts of threads that ended): the trace
// must count every query exactly, and a reset must start again from zero. Returns the number of wrong counts.
int traceCountErrors(const std::vector<id> &devices, const std::vector<Class> &classes, const mcs::Profile &traced) {
  const int kWaves = 3, kThreads = 4, kQueries = 5000;
  mcs::PatchResult patched = mcs::patchClasses(classes);
  if (!patched.ok) return 1;
  mcs::setActiveProfile(&traced);
  mcs::resetTrace();
  auto ask = [&devices]() {
    for (int q = 0; q < kQueries; q++) {
      for (id device : devices) {
        id<MTLDevice> d = (id<MTLDevice>)device;
        (void)[d supportsFamily:(MTLGPUFamily)1009];
        (void)d.maxThreadgroupMemoryLength;
      }
    }
  };
  for (int w = 0; w < kWaves; w++) {
    std::vector<std::thread> wave;
    for (int t = 0; t < kThreads; t++) wave.emplace_back(ask);
    for (std::thread &t : wave) t.join();
  }
  const uint64_t expected = static_cast<uint64_t>(kWaves) * kThreads * kQueries * devices.size();
  int errors = 0;
  uint64_t apple9 = 0, threadgroup = 0;
  for (const mcs::TraceRow &row : mcs::traceRows()) {
    if (row.selector == mcs::HookedSelector::SupportsFamily && row.family == 1009) apple9 = row.calls;
    if (row.selector == mcs::HookedSelector::MaxThreadgroupMemoryLength) threadgroup = row.calls;
  }
  if (apple9 != expected || threadgroup != expected) {
    fprintf(stderr, "trace counted %llu and %llu queries, expected %llu each\n", (unsigned long long)apple9,
            (unsigned long long)threadgroup, (unsigned long long)expected);
    errors++;
  }
  mcs::resetTrace();
  for (const mcs::TraceRow &row : mcs::traceRows()) errors += row.calls != 0;
  mcs::setActiveProfile(nullptr);
  mcs::restoreAllHooks();
  return errors;
}

bool parse(const char *text, mcs::Profile *out) {
  std::string error;
  if (mcs::parseNativeProfile(text, out, &error)) return true;
  fprintf(stderr, "profile rejected: %s\n", error.c_str());
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  int rounds = argc > 1 ? atoi(argv[1]) : 2000;
  mcs::DeviceList list = mcs::copyDevices(true);
  if (list.devices.empty()) {
    fprintf(stderr, "no device: set METAL_CAP_SHIM_SIM_SNAPSHOT\n");
    return 2;
  }
  std::vector<id> devices;
  std::vector<Expected> expected;
  std::vector<mcs::DeviceCapabilities> before;
  for (void *d : list.devices) {
    devices.push_back((id)d);
    before.push_back(mcs::readCapabilities(d));
    expected.push_back({before.back().families[mcs::familyIndex(1009)],
                        (unsigned long)before.back().maxThreadgroupMemoryLength, before.back().name});
  }
  std::vector<Class> classes;
  for (void *c : mcs::distinctDeviceClasses(list)) classes.push_back((Class)c);

  mcs::Profile a, b;
  if (!parse("mcs1;max=1009;tg=65536;wss=-;mode=raise;trace=0;fam=", &a) ||
      !parse("mcs1;max=1007;tg=131072;wss=-;mode=raise;trace=1;fam=5001:0;name=4170706c65204d31", &b)) {
    return 2;
  }
  // The first install adds methods to classes that inherit them. GCC's libobjc rebuilds a class's whole dispatch
  // table in class_addMethod, which is not safe against messages sent to that class on other threads (Apple's
  // runtime flushes method caches for concurrent readers), so readers start after it; from then on installs and
  // restores only set implementations, concurrently with the readers.
  // Every class gets a `name` hook too, so swaps race the name's trace (a string under a lock) as well.
  mcs::PatchResult first = mcs::patchClasses(classes, classes);
  if (!first.ok) {
    fprintf(stderr, "patch failed: %s\n", first.message.c_str());
    return 1;
  }
  mcs::restoreAllHooks();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; i++) threads.emplace_back(reader, devices, expected);
  int conflicts = 0;
  for (int r = 0; r < rounds; r++) {
    mcs::PatchResult patched = mcs::patchClasses(classes, classes);
    if (!patched.ok) {
      fprintf(stderr, "patch failed: %s\n", patched.message.c_str());
      return 1;
    }
    mcs::setActiveProfile(&a);
    mcs::setActiveProfile(&b);
    mcs::setActiveProfile(nullptr);
    conflicts += static_cast<int>(mcs::restoreAllHooks().conflicts.size());
  }
  gRun = false;
  for (std::thread &t : threads) t.join();

  int changed = 0;
  for (size_t i = 0; i < list.devices.size(); i++) {
    mcs::DeviceCapabilities after = mcs::readCapabilities(list.devices[i]);
    for (size_t f = 0; f < mcs::kFamilyCount; f++) changed += after.families[f] != before[i].families[f];
    changed += after.maxThreadgroupMemoryLength != before[i].maxThreadgroupMemoryLength;
    changed += after.recommendedMaxWorkingSetSize != before[i].recommendedMaxWorkingSetSize;
    changed += after.name != before[i].name;
  }
  int traceErrors = traceCountErrors(devices, classes, b);
  printf(
      "rounds %d, queries %lu, bad answers %d, conflicts %d, answers changed after restore %d, trace count errors %d\n",
      rounds, gQueries.load(), gBadAnswers.load(), conflicts, changed, traceErrors);
  mcs::releaseDevices(list);
  [pool release];
  return gBadAnswers.load() == 0 && conflicts == 0 && changed == 0 && traceErrors == 0 ? 0 : 1;
}
