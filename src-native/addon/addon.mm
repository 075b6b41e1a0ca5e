// The N-API face: converts between JavaScript values and the engine's C++ structs, nothing else. Arguments arrive
// validated by lib/ (TypeScript); the checks here only keep a wrong call from crashing the process.
#define NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS
#include <napi.h>

#import <Foundation/Foundation.h>
#include <objc/runtime.h>

#include <mutex>
#include <optional>
#include <string>

#include "addon_doctor.h"
#include "../engine/capabilities.h"
#include "consumers.h"
#include "../engine/families.h"
#include "../platform/host.h"
#include "../engine/patch.h"
#include "../engine/profile.h"
#include "../platform/terminal.h"

namespace mcs {
namespace {

class AutoreleasePool {
 public:
  AutoreleasePool() : pool_([NSAutoreleasePool new]) {}
  ~AutoreleasePool() { [pool_ release]; }
  AutoreleasePool(const AutoreleasePool &) = delete;
  AutoreleasePool &operator=(const AutoreleasePool &) = delete;

 private:
  NSAutoreleasePool *pool_;
};

// Immortal ([[clang::no_destroy]]), like every global the engine touches: exit() runs static destructors while other
// threads may still call in, and libc++'s std::mutex (macOS) has a real destructor, so a destroyed one would throw.
[[clang::no_destroy]] std::mutex gBaselineMutex;
[[clang::no_destroy]] std::string gBaseline;  // JSON of the stock probe taken before the first apply; empty when none
uint64_t gBaselineDevices = 0;                // the deviceSetGeneration() gBaseline was read from

Napi::Value throwError(Napi::Env env, const char *code, const std::string &message, bool typeError = false) {
  Napi::Error error = typeError ? Napi::TypeError::New(env, message) : Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  error.ThrowAsJavaScriptException();
  return env.Undefined();
}

Napi::Value nullable(Napi::Env env, const Optional &o) {
  return o.known ? Napi::Value(Napi::String::New(env, o.value)) : env.Null();
}

Napi::Value numberOrNull(Napi::Env env, bool known, uint64_t v) {
  return known ? Napi::Value(Napi::Number::New(env, static_cast<double>(v))) : env.Null();
}

Napi::Object hostObject(Napi::Env env, const HostFacts &facts) {
  Napi::Object host = Napi::Object::New(env);
  host.Set("osVersion", nullable(env, facts.osVersion));
  host.Set("osBuild", nullable(env, facts.osBuild));
  host.Set("model", nullable(env, facts.model));
  host.Set("isVirtualMachine",
           facts.isVirtualMachine < 0 ? env.Null() : Napi::Value(Napi::Boolean::New(env, facts.isVirtualMachine == 1)));
  host.Set("arch", nullable(env, facts.arch));
  host.Set("memoryBytes", numberOrNull(env, facts.memoryKnown, facts.memoryBytes));
  host.Set("translated",
           facts.translated < 0 ? env.Null() : Napi::Value(Napi::Boolean::New(env, facts.translated == 1)));
  host.Set("cpuBrand", nullable(env, facts.cpuBrand));
  return host;
}

// The host part of a probe: platform, snapshot and host facts, read without touching Metal.
Napi::Object hostResult(Napi::Env env) {
  HostFacts facts = readHostFacts();
  Napi::Object result = Napi::Object::New(env);
  result.Set("platform", Napi::String::New(env, facts.platform));
  result.Set("snapshot", facts.snapshot.empty() ? env.Null() : Napi::Value(Napi::String::New(env, facts.snapshot)));
  result.Set("recordedPlatform", nullable(env, facts.recordedPlatform));
  result.Set("host", hostObject(env, facts));
  return result;
}

Napi::Object deviceObject(Napi::Env env, const DeviceCapabilities &caps) {
  Napi::Object d = Napi::Object::New(env);
  d.Set("index", Napi::Number::New(env, caps.index));
  d.Set("isDefault", Napi::Boolean::New(env, caps.isDefault));
  d.Set("name", Napi::String::New(env, caps.name));
  d.Set("className", Napi::String::New(env, caps.className));
  d.Set("registryId", numberOrNull(env, caps.hasRegistryId, caps.registryId));
  Napi::Object families = Napi::Object::New(env);
  for (size_t i = 0; i < kFamilyCount; i++) {
    families.Set(kFamilies[i].key,
                 caps.hasFamilies ? Napi::Value(Napi::Boolean::New(env, caps.families[i])) : env.Null());
  }
  d.Set("families", families);
  d.Set("maxThreadgroupMemoryLength",
        numberOrNull(env, caps.hasMaxThreadgroupMemoryLength, caps.maxThreadgroupMemoryLength));
  if (caps.hasMaxThreadsPerThreadgroup) {
    Napi::Object size = Napi::Object::New(env);
    size.Set("width", Napi::Number::New(env, static_cast<double>(caps.maxThreads[0])));
    size.Set("height", Napi::Number::New(env, static_cast<double>(caps.maxThreads[1])));
    size.Set("depth", Napi::Number::New(env, static_cast<double>(caps.maxThreads[2])));
    d.Set("maxThreadsPerThreadgroup", size);
  } else {
    d.Set("maxThreadsPerThreadgroup", env.Null());
  }
  d.Set("recommendedMaxWorkingSetSize",
        numberOrNull(env, caps.hasRecommendedMaxWorkingSetSize, caps.recommendedMaxWorkingSetSize));
  d.Set("maxBufferLength", numberOrNull(env, caps.hasMaxBufferLength, caps.maxBufferLength));
  d.Set("hasUnifiedMemory",
        caps.hasUnifiedMemoryKnown ? Napi::Value(Napi::Boolean::New(env, caps.hasUnifiedMemory)) : env.Null());
  d.Set("location", caps.location.empty() ? env.Null() : Napi::Value(Napi::String::New(env, caps.location)));
  d.Set("architecture", caps.hasArchitecture ? Napi::Value(Napi::String::New(env, caps.architecture)) : env.Null());
  return d;
}

bool optionalBool(const Napi::CallbackInfo &info, size_t index, bool fallback, bool *out) {
  if (info.Length() <= index || info[index].IsUndefined()) {
    *out = fallback;
    return true;
  }
  if (!info[index].IsBoolean()) return false;
  *out = info[index].As<Napi::Boolean>().Value();
  return true;
}

// probe(allDevices?: boolean, stock?: boolean)
Napi::Value Probe(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  bool all = false, stock = false;
  if (!optionalBool(info, 0, false, &all) || !optionalBool(info, 1, false, &stock)) {
    return throwError(env, "ERR_INVALID_ARGUMENT", "probe(allDevices, stock) takes booleans", true);
  }
  Napi::Object result = hostResult(env);
  Napi::Array devices = Napi::Array::New(env);
  {
    UntracedScope untraced;
    std::optional<StockAnswersScope> stockAnswers;
    if (stock) stockAnswers.emplace();
    DeviceList list = copyDevices(all);
    for (size_t i = 0; i < list.devices.size(); i++) {
      DeviceCapabilities caps = readCapabilities(list.devices[i]);
      caps.index = list.indexes[i];
      caps.isDefault = static_cast<int>(i) == list.defaultIndex;
      devices.Set(static_cast<uint32_t>(i), deviceObject(env, caps));
    }
    releaseDevices(list);
  }
  result.Set("devices", devices);
  return result;
}

// host(): platform and host facts only. Creates no Metal device: on a dual-GPU Mac that alone would switch GPUs.
Napi::Value Host(const Napi::CallbackInfo &info) {
  return hostResult(info.Env());
}

Napi::Value Families(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env, kFamilyCount);
  for (size_t i = 0; i < kFamilyCount; i++) {
    Napi::Array pair = Napi::Array::New(env, 2);
    pair.Set(0u, Napi::String::New(env, kFamilies[i].key));
    pair.Set(1u, Napi::Number::New(env, static_cast<double>(kFamilies[i].value)));
    out.Set(static_cast<uint32_t>(i), pair);
  }
  return out;
}

Napi::Array hookRefs(Napi::Env env, const std::vector<HookRef> &refs) {
  Napi::Array out = Napi::Array::New(env, refs.size());
  for (size_t i = 0; i < refs.size(); i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("className", Napi::String::New(env, refs[i].className));
    o.Set("selector", Napi::String::New(env, refs[i].selector));
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

// apply(nativeProfile: string, profileJson: string)
Napi::Value Apply(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString()) {
    return throwError(env, "ERR_INVALID_ARGUMENT", "apply(nativeProfile, profileJson) takes two strings", true);
  }
  Profile profile;
  std::string error;
  if (!parseNativeProfile(info[0].As<Napi::String>().Utf8Value().c_str(), &profile, &error)) {
    return throwError(env, "ERR_INVALID_PROFILE", "native profile rejected: " + error);
  }
  profile.json = info[1].As<Napi::String>().Utf8Value();
  Napi::Object result = Napi::Object::New(env);
  DeviceList list = copyDevices(true);
  std::vector<Class> classes;
  for (void *cls : distinctDeviceClasses(list)) classes.push_back((Class)cls);
  std::vector<void *> devices = list.devices;
  if (list.separateDefault != nullptr) devices.push_back(list.separateDefault);
  std::vector<Class> nameClasses = classesNamingOtherwise(devices, profile);
  releaseDevices(list);
  if (classes.empty()) {
    result.Set("ok", Napi::Boolean::New(env, false));
    result.Set("code", Napi::String::New(env, "ERR_NO_DEVICE"));
    result.Set("message", Napi::String::New(env, "Metal returned no device to patch"));
    return result;
  }
  PatchResult patched = patchClasses(classes, nameClasses);
  result.Set("ok", Napi::Boolean::New(env, patched.ok));
  if (!patched.ok) {
    result.Set("code", Napi::String::New(env, patched.errorCode));
    result.Set("message", Napi::String::New(env, patched.message));
    return result;
  }
  // Hooks first, profile second: until the swap, the new hooks answer with the previous profile (or stock).
  setActiveProfile(&profile);
  Napi::Array classList = Napi::Array::New(env, patched.classes.size());
  for (size_t i = 0; i < patched.classes.size(); i++) {
    Napi::Object c = Napi::Object::New(env);
    c.Set("className", Napi::String::New(env, patched.classes[i].className));
    Napi::Array sels = Napi::Array::New(env, patched.classes[i].selectors.size());
    for (size_t j = 0; j < patched.classes[i].selectors.size(); j++) {
      const SelectorPatch &sp = patched.classes[i].selectors[j];
      Napi::Object s = Napi::Object::New(env);
      s.Set("selector", Napi::String::New(env, sp.selector));
      s.Set("outcome", Napi::String::New(env, sp.outcome));
      s.Set("mode", Napi::String::New(env, sp.mode));
      sels.Set(static_cast<uint32_t>(j), s);
    }
    c.Set("selectors", sels);
    classList.Set(static_cast<uint32_t>(i), c);
  }
  result.Set("classes", classList);
  return result;
}

Napi::Value Restore(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  setActiveProfile(nullptr);
  RestoreReport report = restoreAllHooks();
  Napi::Object result = Napi::Object::New(env);
  result.Set("restored", hookRefs(env, report.restored));
  result.Set("conflicts", hookRefs(env, report.conflicts));
  return result;
}

Napi::Value Status(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const Profile *active = activeProfile();
  Napi::Object result = Napi::Object::New(env);
  result.Set("active", Napi::Boolean::New(env, active != nullptr));
  result.Set("profileJson", active == nullptr ? env.Null() : Napi::Value(Napi::String::New(env, active->json)));
  result.Set("trace", Napi::Boolean::New(env, active != nullptr && active->trace));
  std::vector<HookInfo> infos = hookInfos();
  Napi::Array hooks = Napi::Array::New(env);
  uint32_t n = 0;
  for (const HookInfo &h : infos) {
    if (!h.installed) continue;
    Napi::Object o = Napi::Object::New(env);
    o.Set("className", Napi::String::New(env, h.className));
    o.Set("selector", Napi::String::New(env, h.selector));
    o.Set("mode", Napi::String::New(env, h.mode == HookMode::Added ? "added" : "replaced"));
    o.Set("ours", Napi::Boolean::New(env, h.ours));
    hooks.Set(n++, o);
  }
  result.Set("hooks", hooks);
  return result;
}

// trace(reset?: boolean)
Napi::Value Trace(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  bool reset = false;
  if (!optionalBool(info, 0, false, &reset)) {
    return throwError(env, "ERR_INVALID_ARGUMENT", "trace(reset) takes a boolean", true);
  }
  Napi::Array rows = Napi::Array::New(env);
  uint32_t n = 0;
  for (const TraceRow &row : traceRows()) {
    if (row.calls == 0) continue;
    Napi::Object o = Napi::Object::New(env);
    o.Set("selector", Napi::String::New(env, selectorName(row.selector)));
    o.Set("family", row.selector == HookedSelector::SupportsFamily
                        ? Napi::Value(Napi::Number::New(env, static_cast<double>(row.family)))
                        : env.Null());
    o.Set("calls", Napi::Number::New(env, static_cast<double>(row.calls)));
    if (row.selector == HookedSelector::Name) {
      o.Set("stock", Napi::String::New(env, row.stockName));
      o.Set("given", Napi::String::New(env, row.givenName));
    } else {
      o.Set("stock", Napi::Number::New(env, static_cast<double>(row.lastStock)));
      o.Set("given", Napi::Number::New(env, static_cast<double>(row.lastGiven)));
    }
    rows.Set(n++, o);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("rows", rows);
  result.Set("dropped", Napi::Number::New(env, static_cast<double>(traceDropped())));
  if (reset) resetTrace();
  return result;
}

// baseline(json?: string): stores the stock probe once (first call with a string wins) and returns what is stored.
Napi::Value Baseline(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::lock_guard<std::mutex> lock(gBaselineMutex);
  // A baseline read from another device set (the test build's simulation loaded another snapshot) is none.
  uint64_t devices = deviceSetGeneration();
  if (gBaselineDevices != devices) gBaseline.clear();
  if (info.Length() > 0 && info[0].IsString() && gBaseline.empty()) {
    gBaseline = info[0].As<Napi::String>().Utf8Value();
    gBaselineDevices = devices;
  }
  return gBaseline.empty() ? env.Null() : Napi::Value(Napi::String::New(env, gBaseline));
}

Napi::Value LoadedConsumers(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::vector<std::string> found = loadedConsumers();
  Napi::Array out = Napi::Array::New(env, found.size());
  for (size_t i = 0; i < found.size(); i++) out.Set(static_cast<uint32_t>(i), Napi::String::New(env, found[i]));
  return out;
}

// ggmlMetalImages(markers): [{ image, ggmlVersion, markers }] for every loaded ggml-metal (consumers.h).
Napi::Value GgmlMetalImages(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) {
    return throwError(env, "ERR_INVALID_ARGUMENT", "ggmlMetalImages(markers) takes an array of strings", true);
  }
  Napi::Array given = info[0].As<Napi::Array>();
  std::vector<std::string> markers;
  for (uint32_t i = 0; i < given.Length(); i++) {
    Napi::Value v = given.Get(i);
    if (!v.IsString())
      return throwError(env, "ERR_INVALID_ARGUMENT", "ggmlMetalImages(markers) takes an array of strings", true);
    markers.push_back(v.As<Napi::String>().Utf8Value());
  }
  std::vector<LoadedGgmlMetal> found = loadedGgmlMetal(markers);
  Napi::Array out = Napi::Array::New(env, found.size());
  for (size_t i = 0; i < found.size(); i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("image", Napi::String::New(env, found[i].image));
    o.Set("ggmlVersion", found[i].hasVersion ? Napi::Value(Napi::String::New(env, found[i].version)) : env.Null());
    Napi::Array m = Napi::Array::New(env, found[i].markers.size());
    for (size_t j = 0; j < found[i].markers.size(); j++)
      m.Set(static_cast<uint32_t>(j), Napi::String::New(env, found[i].markers[j]));
    o.Set("markers", m);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

// processGroups(childPid): { own, terminal, child } process-group ids, -1 where there is none.
Napi::Value ProcessGroupsOf(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    return throwError(env, "ERR_INVALID_ARGUMENT", "processGroups(childPid) takes a number", true);
  }
  ProcessGroups groups = processGroups(static_cast<long>(info[0].As<Napi::Number>().Int64Value()));
  Napi::Object out = Napi::Object::New(env);
  out.Set("own", Napi::Number::New(env, static_cast<double>(groups.own)));
  out.Set("terminal", Napi::Number::New(env, static_cast<double>(groups.terminal)));
  out.Set("child", Napi::Number::New(env, static_cast<double>(groups.child)));
  return out;
}

Napi::Value Info(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
#if defined(__APPLE__)
  out.Set("platform", Napi::String::New(env, "darwin"));
  out.Set("runtime", Napi::String::New(env, "apple"));
#else
  out.Set("platform", Napi::String::New(env, "simulated"));
  out.Set("runtime", Napi::String::New(env, "gcc"));
#endif
  out.Set("maxHooks", Napi::Number::New(env, kMaxHooks));
  return out;
}

// Every entry point runs inside its own autorelease pool: Node's threads have none, and Metal and Foundation
// autorelease what they hand back.
template <Napi::Value (*Entry)(const Napi::CallbackInfo &)>
Napi::Value pooled(const Napi::CallbackInfo &info) {
  AutoreleasePool pool;
  return Entry(info);
}

struct Entry {
  const char *name;
  Napi::Value (*fn)(const Napi::CallbackInfo &);
};

// The binding's functions, by the names types/binding.d.ts gives them.
constexpr Entry kEntries[] = {
    {"probe", pooled<Probe>},
    {"host", pooled<Host>},
    {"families", pooled<Families>},
    {"apply", pooled<Apply>},
    {"restore", pooled<Restore>},
    {"status", pooled<Status>},
    {"trace", pooled<Trace>},
    {"baseline", pooled<Baseline>},
    {"loadedConsumers", pooled<LoadedConsumers>},
    {"ggmlMetalImages", pooled<GgmlMetalImages>},
    {"info", pooled<Info>},
    {"processGroups", pooled<ProcessGroupsOf>},
    {"doctor", pooled<Doctor>},
};

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  for (const Entry &entry : kEntries) exports.Set(entry.name, Napi::Function::New(env, entry.fn, entry.name));
  return exports;
}

}  // namespace
}  // namespace mcs

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  return mcs::Init(env, exports);
}

NODE_API_MODULE(metal_cap_shim, InitModule)
