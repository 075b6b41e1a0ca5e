#include "swizzle.h"

#include <array>
#include <atomic>
#include <utility>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace mcs {

HookHot gHookHot[kMaxHooks];

namespace {

struct HookEntry {
  Class cls = Nil;
  Class superclass = Nil;
  SEL sel = NULL;
  IMP replacement = NULL;
  bool installed = false;
  HookHot &hot;
};

template <size_t... I>
constexpr std::array<HookEntry, kMaxHooks> makeEntries(std::index_sequence<I...>) {
  return {HookEntry{Nil, Nil, NULL, NULL, false, gHookHot[I]}...};
}
// Initialised as a constant, at load, before any constructor runs: the injector's constructor in the same dylib may
// install hooks before a dynamic initialiser of this file would have run, which would then wipe them.
[[clang::require_constant_initialization]] std::array<HookEntry, kMaxHooks> gHooks =
    makeEntries(std::make_index_sequence<kMaxHooks>{});
// Published after an entry is filled, so readers never see a half-written slot.
std::atomic<int> gHookCount{0};
// Immortal: see gRetiredMutex in profile.mm (libc++'s std::mutex has a destructor; exit() must not run it while a
// hooked query or a restore on another thread still locks it).
[[clang::no_destroy]] std::mutex gInstallMutex;

// Selector equality by name: GCC's runtime keeps typed selectors, so one name can have several SEL values.
bool sameSelector(SEL a, SEL b) {
  return a == b || strcmp(sel_getName(a), sel_getName(b)) == 0;
}

// The class's own method for `sel`, ignoring superclasses (class_getInstanceMethod would return an inherited one).
Method ownMethod(Class cls, SEL sel) {
  unsigned int count = 0;
  Method *methods = class_copyMethodList(cls, &count);
  Method found = NULL;
  for (unsigned int i = 0; i < count && found == NULL; i++) {
    if (sameSelector(method_getName(methods[i]), sel)) found = methods[i];
  }
  free(methods);
  return found;
}

int findSlot(Class cls, SEL sel) {
  int count = gHookCount.load(std::memory_order_acquire);
  for (int i = 0; i < count; i++) {
    if (gHooks[i].cls == cls && sameSelector(gHooks[i].sel, sel)) return i;
  }
  return -1;
}

IMP superclassImplementation(const HookEntry &e) {
  return e.superclass == Nil ? NULL : class_getMethodImplementation(e.superclass, e.sel);
}

// Points the class's own method (present now) at our replacement, recording what it answered with.
InstallOutcome attach(HookEntry &e, Method own) {
  IMP current = method_getImplementation(own);
  if (current == e.replacement) {
    // A restored added hook, left as a pass-through: it answers from the profile again.
    e.hot.live.store(true, std::memory_order_release);
    e.installed = true;
    return InstallOutcome::Installed;
  }
  // A method we added earlier and restored to the superclass's implementation is still "inherited" in spirit.
  bool stillInherited = e.hot.added.load() && current == superclassImplementation(e);
  if (!stillInherited) e.hot.original.store(current, std::memory_order_relaxed);
  e.hot.added.store(stillInherited, std::memory_order_release);
  e.hot.live.store(true, std::memory_order_release);
  method_setImplementation(own, e.replacement);
  e.installed = true;
  return InstallOutcome::Installed;
}

}  // namespace

InstallOutcome installHook(Class cls, SEL sel, SlotImpFactory factory, int *slotOut) {
  std::lock_guard<std::mutex> lock(gInstallMutex);
  int slot = findSlot(cls, sel);
  if (slot >= 0) {
    *slotOut = slot;
    HookEntry &e = gHooks[slot];
    Method own = ownMethod(cls, sel);
    // Installed and someone hooked on top of us: we are still in their chain, so do not wrap again.
    if (e.installed) return InstallOutcome::AlreadyOurs;
    if (own == NULL) return InstallOutcome::MethodMissing;
    return attach(e, own);
  }
  Method inherited = class_getInstanceMethod(cls, sel);
  if (inherited == NULL) return InstallOutcome::MethodMissing;
  slot = gHookCount.load(std::memory_order_relaxed);
  if (slot >= kMaxHooks) return InstallOutcome::TableFull;
  HookEntry &e = gHooks[slot];
  e.cls = cls;
  e.superclass = class_getSuperclass(cls);
  e.sel = sel;
  e.hot.superclass.store((void *)e.superclass, std::memory_order_relaxed);
  e.hot.sel.store((void *)sel, std::memory_order_relaxed);
  e.replacement = factory(slot);
  *slotOut = slot;
  Method own = ownMethod(cls, sel);
  e.hot.live.store(true, std::memory_order_relaxed);
  if (own != NULL) {
    e.hot.original.store(method_getImplementation(own), std::memory_order_relaxed);
    e.hot.added.store(false, std::memory_order_release);
    gHookCount.store(slot + 1, std::memory_order_release);
    method_setImplementation(own, e.replacement);
  } else {
    // Never class_replaceMethod here: on GCC's runtime it rewrites the superclass's method when the method is
    // inherited, which would patch every sibling class. class_addMethod touches this class only, on both runtimes.
    e.hot.added.store(true, std::memory_order_release);
    gHookCount.store(slot + 1, std::memory_order_release);
    if (!class_addMethod(cls, sel, e.replacement, method_getTypeEncoding(inherited))) {
      return InstallOutcome::MethodMissing;
    }
  }
  e.installed = true;
  return InstallOutcome::Installed;
}

RestoreOutcome restoreHook(int slot) {
  std::lock_guard<std::mutex> lock(gInstallMutex);
  if (slot < 0 || slot >= gHookCount.load(std::memory_order_acquire)) return RestoreOutcome::NotInstalled;
  HookEntry &e = gHooks[slot];
  if (!e.installed) return RestoreOutcome::NotInstalled;
  Method own = ownMethod(e.cls, e.sel);
  if (own == NULL || method_getImplementation(own) != e.replacement) return RestoreOutcome::Conflict;
  e.hot.live.store(false, std::memory_order_release);
  // The public runtime cannot remove a method. An added one stays as a pass-through that calls the superclass's
  // current implementation (originalImplementation), so the class answers as it did when it inherited the method,
  // and a hook installed on the superclass later is honoured. A replaced one gets its own implementation back.
  if (!e.hot.added.load()) method_setImplementation(own, e.hot.original.load());
  e.installed = false;
  return RestoreOutcome::Restored;
}

std::vector<int> installedSlots() {
  std::lock_guard<std::mutex> lock(gInstallMutex);
  std::vector<int> slots;
  int count = gHookCount.load(std::memory_order_acquire);
  for (int i = 0; i < count; i++) {
    if (gHooks[i].installed) slots.push_back(i);
  }
  return slots;
}

std::vector<HookInfo> hookInfos() {
  std::lock_guard<std::mutex> lock(gInstallMutex);
  std::vector<HookInfo> infos;
  int count = gHookCount.load(std::memory_order_acquire);
  for (int i = 0; i < count; i++) {
    const HookEntry &e = gHooks[i];
    Method own = ownMethod(e.cls, e.sel);
    bool ours = e.installed && own != NULL && method_getImplementation(own) == e.replacement;
    infos.push_back({class_getName(e.cls), sel_getName(e.sel),
                     e.hot.added.load() ? HookMode::Added : HookMode::Replaced, e.installed, ours});
  }
  return infos;
}

}  // namespace mcs
