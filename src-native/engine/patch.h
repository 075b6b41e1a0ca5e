// Patching device classes as a unit: every hooked selector on every class, or nothing. Shared by the addon and the
// exec injector.
#pragma once

#include <objc/runtime.h>

#include <string>
#include <vector>

#include "swizzle.h"

namespace mcs {

struct SelectorPatch {
  std::string selector;
  std::string outcome;  // "installed" | "already-installed"
  std::string mode;     // "replaced" | "added"
};

struct ClassPatch {
  std::string className;
  std::vector<SelectorPatch> selectors;
};

struct PatchResult {
  bool ok = false;
  std::string errorCode;  // ERR_HOOK_FAILED
  std::string message;
  std::vector<ClassPatch> classes;
};

struct Profile;

// Installs the answer selectors (supportsFamily: and the two sizes) on each class, and `name` on each of
// `nameClasses` too. If any fails, the hooks this call installed are taken out again, so the process is left exactly
// as before.
PatchResult patchClasses(const std::vector<Class> &classes, const std::vector<Class> &nameClasses = {});

// The classes of `devices` (id<MTLDevice>) whose `name` needs a hook for `profile` to answer its name: those with a
// device that answers another name stock. None when the profile sets no name, so on bare metal a profile naming the
// host's own chip installs no `name` hook at all.
std::vector<Class> classesNamingOtherwise(const std::vector<void *> &devices, const Profile &profile);

struct HookRef {
  std::string className;
  std::string selector;
};

struct RestoreReport {
  std::vector<HookRef> restored;
  std::vector<HookRef> conflicts;
};

RestoreReport restoreAllHooks();

}  // namespace mcs
