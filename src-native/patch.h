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

// Installs every hooked selector on each class. If any fails, the hooks this call installed are taken out again,
// so the process is left exactly as before.
PatchResult patchClasses(const std::vector<Class> &classes);

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
