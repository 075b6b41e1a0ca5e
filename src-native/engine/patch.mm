#include "patch.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include "profile.h"

#include <algorithm>

namespace mcs {
namespace {

const char *modeName(HookMode mode) {
  return mode == HookMode::Added ? "added" : "replaced";
}

}  // namespace

PatchResult patchClasses(const std::vector<Class> &classes, const std::vector<Class> &nameClasses) {
  PatchResult result;
  std::vector<int> installedNow;
  for (Class cls : classes) {
    ClassPatch patch;
    patch.className = class_getName(cls);
    bool hookName = std::find(nameClasses.begin(), nameClasses.end(), cls) != nameClasses.end();
    for (int s = 0; s < (hookName ? kHookedSelectorCount : kAnswerSelectorCount); s++) {
      auto selector = static_cast<HookedSelector>(s);
      int slot = -1;
      InstallOutcome outcome = installHook(cls, selectorFor(selector), factoryFor(selector), &slot);
      if (outcome == InstallOutcome::MethodMissing || outcome == InstallOutcome::TableFull) {
        for (auto it = installedNow.rbegin(); it != installedNow.rend(); ++it) restoreHook(*it);
        result.errorCode = "ERR_HOOK_FAILED";
        result.message = std::string("cannot hook -[") + patch.className + " " + selectorName(selector) + "]: " +
                         (outcome == InstallOutcome::TableFull
                              ? "too many hooked classes in this process"
                              : "the class does not implement it (a Metal validation or capture wrapper such as "
                                "MTLDebugDevice can lack it: unset MTL_DEBUG_LAYER and retry)");
        result.classes.clear();
        return result;
      }
      if (outcome == InstallOutcome::Installed) installedNow.push_back(slot);
      patch.selectors.push_back(
          {selectorName(selector), outcome == InstallOutcome::Installed ? "installed" : "already-installed", ""});
    }
    result.classes.push_back(patch);
  }
  // Modes are read after the fact from the engine's own records, which know whether a method was added.
  std::vector<HookInfo> infos = hookInfos();
  for (ClassPatch &patch : result.classes) {
    for (SelectorPatch &sp : patch.selectors) {
      for (const HookInfo &info : infos) {
        if (info.className == patch.className && info.selector == sp.selector) sp.mode = modeName(info.mode);
      }
    }
  }
  result.ok = true;
  return result;
}

std::vector<Class> classesNamingOtherwise(const std::vector<void *> &devices, const Profile &profile) {
  std::vector<Class> out;
  if (!profile.hasName) return out;
  // The stock name, also under a `name` hook a previous profile left installed.
  StockAnswersScope stock;
  for (void *device : devices) {
    Class cls = object_getClass((id)device);
    if (std::find(out.begin(), out.end(), cls) != out.end()) continue;
    if (utf8Text([(id<MTLDevice>)device name]) != profile.name) out.push_back(cls);
  }
  return out;
}

RestoreReport restoreAllHooks() {
  RestoreReport report;
  std::vector<HookInfo> infos = hookInfos();
  std::vector<int> slots = installedSlots();
  // Every class's own methods go back first, then the added ones, superclasses before subclasses. An added method
  // stays as a pass-through to its superclass's current implementation (restoreHook), so nothing is copied and the
  // order only makes the report read from the roots down.
  auto depth = [&](int slot) {
    int d = 0;
    for (Class c = objc_getClass(infos[slot].className.c_str()); c != Nil; c = class_getSuperclass(c)) d++;
    return d;
  };
  std::stable_sort(slots.begin(), slots.end(), [&](int a, int b) {
    bool addedA = infos[a].mode == HookMode::Added;
    bool addedB = infos[b].mode == HookMode::Added;
    if (addedA != addedB) return !addedA;
    return addedA && depth(a) < depth(b);
  });
  for (int slot : slots) {
    const HookInfo &info = infos[slot];
    RestoreOutcome outcome = restoreHook(slot);
    if (outcome == RestoreOutcome::Restored) report.restored.push_back({info.className, info.selector});
    if (outcome == RestoreOutcome::Conflict) report.conflicts.push_back({info.className, info.selector});
  }
  return report;
}

}  // namespace mcs
