// The hook engine: installs, restores and recognises replacement implementations for one (class, selector) at a
// time, over the public Objective-C runtime API only, so the same code runs on Apple's runtime and on GCC's libobjc.
//
// Each hook owns a numbered slot. The replacement IMP for a slot is a distinct function (see profile.mm), so it can
// find its own original without walking the class chain, and two hooked classes in one hierarchy never recurse
// into each other.
#pragma once

#include <objc/runtime.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

namespace mcs {

// Upper bound on hooks per process: selectors hooked per class times distinct device classes, with ample room.
inline constexpr int kMaxHooks = 48;

// Gives the replacement IMP for a slot; the caller owns the per-slot functions.
using SlotImpFactory = IMP (*)(int slot);

enum class InstallOutcome {
  Installed,    // our implementation is now the class's answer
  AlreadyOurs,  // installed earlier and still in the class's dispatch path
  MethodMissing,
  TableFull,
};

enum class RestoreOutcome {
  Restored,  // the class answers with exactly what it answered before the hook
  NotInstalled,
  Conflict,  // someone replaced our implementation after us; theirs is left in place
};

// How a hook reached its class.
enum class HookMode {
  Replaced,  // the class had its own method; we set a new implementation on it
  Added,     // the method was inherited; we added one on this class only
};

struct HookInfo {
  std::string className;
  std::string selector;
  HookMode mode;
  bool installed;
  bool ours;  // installed and the class's current implementation is still ours
};

InstallOutcome installHook(Class cls, SEL sel, SlotImpFactory factory, int *slotOut);
RestoreOutcome restoreHook(int slot);

// What a replacement needs on every call, kept apart from the bookkeeping so the hot path reads one small record.
// The writer fills `superclass`, `sel` and `original`, then publishes with a release store of `added`; a replacement
// reads `added` with acquire first. The runtime's own dispatch tables are no ordering guarantee for these fields.
struct HookHot {
  std::atomic<IMP> original{NULL};
  std::atomic<bool> added{false};
  // True while the hook is installed. A restored added hook stays in the class as a pass-through (the public runtime
  // cannot remove a method, and a copy of the superclass's implementation would shadow a later hook on the
  // superclass): with `live` false, its replacement answers with whatever the superclass answers now.
  std::atomic<bool> live{false};
  // void *: libstdc++'s atomics reject Class, which Objective-C++ treats as an object pointer.
  std::atomic<void *> superclass{nullptr};
  std::atomic<void *> sel{nullptr};
};
extern HookHot gHookHot[kMaxHooks];

// The implementation a slot's replacement should call: the saved original, or, for an added method, whatever the
// superclass answers with now (so a later hook on the superclass is honoured, as RSSwizzle does).
inline IMP originalImplementation(int slot) {
  const HookHot &h = gHookHot[slot];
  if (h.added.load(std::memory_order_acquire)) {
    return class_getMethodImplementation((Class)h.superclass.load(std::memory_order_relaxed),
                                         (SEL)h.sel.load(std::memory_order_relaxed));
  }
  return h.original.load(std::memory_order_relaxed);
}

// True while the slot's hook is installed; a replacement answers from the active profile only then.
inline bool hookLive(int slot) {
  return gHookHot[slot].live.load(std::memory_order_relaxed);
}

// Slots currently installed, in installation order.
std::vector<int> installedSlots();
std::vector<HookInfo> hookInfos();

}  // namespace mcs
