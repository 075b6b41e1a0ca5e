// A Metal consumer compiled separately from metal-cap-shim (it links only the simulated Metal library), loaded into
// the test process as a second addon. It stands for a foreign engine such as ggml-metal: it asks devices through
// Apple's public API, hammers queries from native threads, and plays the part of another swizzler.
#define NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS
#include <dlfcn.h>
#include <fcntl.h>
#include <napi.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalSim/MetalSim.h>
#include <objc/runtime.h>

#include <atomic>
#include <chrono>
#include <map>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

const long kAskedFamilies[] = {1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010,
                               1011, 2001, 2002, 3001, 3002, 3003, 4001, 4002, 5001, 5002};

Napi::Object deviceAnswers(Napi::Env env, id<MTLDevice> device) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("className", Napi::String::New(env, class_getName(object_getClass((id)device))));
  o.Set("name", Napi::String::New(env, [[device name] UTF8String]));
  Napi::Object families = Napi::Object::New(env);
  for (long f : kAskedFamilies) {
    families.Set(std::to_string(f), Napi::Boolean::New(env, [device supportsFamily:(MTLGPUFamily)f] ? true : false));
  }
  o.Set("families", families);
  o.Set("maxThreadgroupMemoryLength", Napi::Number::New(env, static_cast<double>(device.maxThreadgroupMemoryLength)));
  o.Set("recommendedMaxWorkingSetSize",
        Napi::Number::New(env, static_cast<double>(device.recommendedMaxWorkingSetSize)));
  return o;
}

// query(all?: boolean): the default device's answers, or every device's.
Napi::Value Query(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  Napi::Value result = env.Null();
  if (info.Length() > 0 && info[0].ToBoolean().Value()) {
    NSArray *devices = MTLCopyAllDevices();
    Napi::Array out = Napi::Array::New(env, [devices count]);
    for (NSUInteger i = 0; i < [devices count]; i++) {
      out.Set(static_cast<uint32_t>(i), deviceAnswers(env, [devices objectAtIndex:i]));
    }
    [devices release];
    result = out;
  } else {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (device != nil) result = deviceAnswers(env, device);
    [(id)device release];
  }
  [pool release];
  return result;
}

// ---- concurrent queries ----

std::atomic<bool> gHammerRun{false};
std::vector<std::thread> gHammerThreads;
std::mutex gSeenMutex;
std::set<std::string> gSeen;
std::atomic<uint64_t> gHammerCalls{0};

void hammer(long family) {
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  std::set<std::string> seen;
  uint64_t calls = 0;
  while (gHammerRun.load(std::memory_order_relaxed)) {
    BOOL yes = [device supportsFamily:(MTLGPUFamily)family];
    NSUInteger tg = device.maxThreadgroupMemoryLength;
    // Answers are recorded one by one: apply/restore may land between the two reads of one iteration.
    seen.insert(std::string("family:") + (yes ? "YES" : "NO"));
    seen.insert("threadgroup:" + std::to_string(tg));
    calls++;
  }
  [(id)device release];
  [pool release];
  std::lock_guard<std::mutex> lock(gSeenMutex);
  gSeen.insert(seen.begin(), seen.end());
  gHammerCalls += calls;
}

// startHammer(threads: number, family: number)
Napi::Value StartHammer(const Napi::CallbackInfo &info) {
  int threads = info[0].As<Napi::Number>().Int32Value();
  long family = info[1].As<Napi::Number>().Int64Value();
  gSeen.clear();
  gHammerCalls = 0;
  gHammerRun = true;
  for (int i = 0; i < threads; i++) gHammerThreads.emplace_back(hammer, family);
  return info.Env().Undefined();
}

// stopHammer() -> { calls, seen: ["family:YES", "threadgroup:65536", ...] }
Napi::Value StopHammer(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  gHammerRun = false;
  for (std::thread &t : gHammerThreads) t.join();
  gHammerThreads.clear();
  Napi::Object out = Napi::Object::New(env);
  out.Set("calls", Napi::Number::New(env, static_cast<double>(gHammerCalls.load())));
  Napi::Array seen = Napi::Array::New(env);
  uint32_t n = 0;
  for (const std::string &s : gSeen) seen.Set(n++, Napi::String::New(env, s));
  out.Set("seen", seen);
  return out;
}

// ---- another swizzler ----

struct ForeignHook {
  Class cls;
  IMP previous;
  bool added;
};
std::vector<ForeignHook> gForeign;
std::atomic<unsigned long> gForeignAnswer{0};

NSUInteger foreignMaxThreadgroupMemory(id self, SEL cmd) {
  IMP previous = NULL;
  for (const ForeignHook &h : gForeign) {
    if (h.cls == object_getClass(self)) previous = h.previous;
  }
  // A well-behaved swizzler calls through, then substitutes its own answer.
  if (previous != NULL) reinterpret_cast<NSUInteger (*)(id, SEL)>(previous)(self, cmd);
  return gForeignAnswer.load();
}

Method ownMethod(Class cls, SEL sel) {
  unsigned int count = 0;
  Method *methods = class_copyMethodList(cls, &count);
  Method found = NULL;
  for (unsigned int i = 0; i < count; i++) {
    if (strcmp(sel_getName(method_getName(methods[i])), sel_getName(sel)) == 0) found = methods[i];
  }
  free(methods);
  return found;
}

// installForeignHook(className, answer): hooks -maxThreadgroupMemoryLength the way a third party would.
Napi::Value InstallForeignHook(const Napi::CallbackInfo &info) {
  Class cls = objc_getClass(info[0].As<Napi::String>().Utf8Value().c_str());
  gForeignAnswer = static_cast<unsigned long>(info[1].As<Napi::Number>().Int64Value());
  SEL sel = sel_registerName("maxThreadgroupMemoryLength");
  if (cls == Nil) return Napi::Boolean::New(info.Env(), false);
  Method own = ownMethod(cls, sel);
  if (own != NULL) {
    gForeign.push_back({cls, method_getImplementation(own), false});
    method_setImplementation(own, reinterpret_cast<IMP>(&foreignMaxThreadgroupMemory));
  } else {
    Method inherited = class_getInstanceMethod(cls, sel);
    gForeign.push_back({cls, class_getMethodImplementation(class_getSuperclass(cls), sel), true});
    class_addMethod(cls, sel, reinterpret_cast<IMP>(&foreignMaxThreadgroupMemory), method_getTypeEncoding(inherited));
  }
  return Napi::Boolean::New(info.Env(), true);
}

// removeForeignHook(className): puts back what the foreign hook replaced.
Napi::Value RemoveForeignHook(const Napi::CallbackInfo &info) {
  Class cls = objc_getClass(info[0].As<Napi::String>().Utf8Value().c_str());
  SEL sel = sel_registerName("maxThreadgroupMemoryLength");
  for (auto it = gForeign.begin(); it != gForeign.end(); ++it) {
    if (it->cls != cls) continue;
    Method own = ownMethod(cls, sel);
    if (own != NULL) method_setImplementation(own, it->previous);
    gForeign.erase(it);
    return Napi::Boolean::New(info.Env(), true);
  }
  return Napi::Boolean::New(info.Env(), false);
}

// methodInfo(className, selector) -> { own: bool, imp: string, superImp: string }
Napi::Value MethodInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Class cls = objc_getClass(info[0].As<Napi::String>().Utf8Value().c_str());
  SEL sel = sel_registerName(info[1].As<Napi::String>().Utf8Value().c_str());
  if (cls == Nil) return env.Null();
  char buf[32];
  Napi::Object o = Napi::Object::New(env);
  o.Set("own", Napi::Boolean::New(env, ownMethod(cls, sel) != NULL));
  snprintf(buf, sizeof(buf), "%p", reinterpret_cast<void *>(class_getMethodImplementation(cls, sel)));
  o.Set("imp", Napi::String::New(env, buf));
  Class super = class_getSuperclass(cls);
  snprintf(buf, sizeof(buf), "%p",
           super == Nil ? NULL : reinterpret_cast<void *>(class_getMethodImplementation(super, sel)));
  o.Set("superImp", Napi::String::New(env, buf));
  o.Set("superclass", Napi::String::New(env, super == Nil ? "" : class_getName(super)));
  return o;
}

// ---- devices of classes Metal never hands out ----

// strayDevice(className, simIndex) -> answers of an object of `className` (a new subclass of _MTLDevice, or
// _MTLDevice itself) backed by snapshot device `simIndex`. applyProfile never sees these classes, so they show
// what a sibling class and the base class answer while device classes are patched.
Napi::Value StrayDevice(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::string name = info[0].As<Napi::String>().Utf8Value();
  int64_t simIndex = info[1].As<Napi::Number>().Int64Value();
  Class base = objc_getClass("_MTLDevice");
  Class cls = objc_getClass(name.c_str());
  if (cls == Nil) {
    cls = objc_allocateClassPair(base, name.c_str(), 0);
    objc_registerClassPair(cls);
  }
  Ivar ivar = class_getInstanceVariable(base, "_simIndex");
  if (ivar == NULL) return env.Null();
  id object = class_createInstance(cls, 0);
  *reinterpret_cast<size_t *>(reinterpret_cast<char *>(object) + ivar_getOffset(ivar)) = static_cast<size_t>(simIndex);
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  Napi::Object answers = deviceAnswers(env, (id<MTLDevice>)object);
  [pool release];
  return answers;
}

// benchQueries(iterations) -> nanoseconds per call of supportsFamily:(Apple7) and maxThreadgroupMemoryLength
Napi::Value BenchQueries(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int64_t iterations = info[0].As<Napi::Number>().Int64Value();
  NSAutoreleasePool *pool = [NSAutoreleasePool new];
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  volatile uint64_t sink = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; i++) sink += [device supportsFamily:MTLGPUFamilyApple7] ? 1 : 0;
  auto t1 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; i++) sink += device.maxThreadgroupMemoryLength;
  auto t2 = std::chrono::steady_clock::now();
  [(id)device release];
  [pool release];
  (void)sink;
  Napi::Object o = Napi::Object::New(env);
  double n = static_cast<double>(iterations);
  o.Set("supportsFamilyNs", Napi::Number::New(env, std::chrono::duration<double, std::nano>(t1 - t0).count() / n));
  o.Set("maxThreadgroupMemoryNs",
        Napi::Number::New(env, std::chrono::duration<double, std::nano>(t2 - t1).count() / n));
  return o;
}

// deviceCalls(): how often this process has called MTLCreateSystemDefaultDevice() / MTLCopyAllDevices() so far.
Napi::Value DeviceCalls(const Napi::CallbackInfo &info) {
  MTLSimDeviceCalls calls;
  MTLSimGetDeviceCalls(&calls);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("MTLCreateSystemDefaultDevice",
        Napi::Number::New(info.Env(), static_cast<double>(calls.createSystemDefaultDevice)));
  o.Set("MTLCopyAllDevices", Napi::Number::New(info.Env(), static_cast<double>(calls.copyAllDevices)));
  return o;
}

// noCopyWithoutDeallocator(): NoCopy buffers made without a deallocator, so far in this process.
Napi::Value NoCopyWithoutDeallocator(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<double>(MTLSimGetNoCopyWithoutDeallocator()));
}

// noCopyAfterUnmap(): NoCopy buffers released after their memory was unmapped, so far in this process.
Napi::Value NoCopyAfterUnmap(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<double>(MTLSimGetNoCopyAfterUnmap()));
}

// inheritableDoctorFiles(): descriptors on a doctor-generated file open without close-on-exec when a NoCopy buffer
// was made, so far in this process.
Napi::Value InheritableDoctorFiles(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<double>(MTLSimGetInheritableDoctorFiles()));
}

// openLibrary(path) / closeLibrary(path): dlopen (RTLD_LOCAL) and dlclose a plain shared library, which Node's
// process.dlopen cannot unload: a library unloaded and loaded again at the same path, as a rebuilt plugin is.
[[clang::no_destroy]] std::map<std::string, void *> gOpenLibraries;

Napi::Value OpenLibrary(const Napi::CallbackInfo &info) {
  std::string file = info[0].As<Napi::String>().Utf8Value();
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    Napi::Error::New(info.Env(), std::string("openLibrary: ") + dlerror()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  gOpenLibraries[file] = handle;
  return info.Env().Undefined();
}

Napi::Value CloseLibrary(const Napi::CallbackInfo &info) {
  std::string file = info[0].As<Napi::String>().Utf8Value();
  auto found = gOpenLibraries.find(file);
  if (found != gOpenLibraries.end()) {
    dlclose(found->second);
    gOpenLibraries.erase(found);
  }
  return info.Env().Undefined();
}

// noCopyColdPages(): pages under NoCopy buffers that were not resident when the buffer was made, so far.
Napi::Value NoCopyColdPages(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<double>(MTLSimGetNoCopyColdPages()));
}

// residentPages(path): how many of the file's pages are in memory now, and of how many (mincore over a mapping of it).
Napi::Value ResidentPages(const Napi::CallbackInfo &info) {
  std::string file = info[0].As<Napi::String>().Utf8Value();
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    if (fd >= 0) close(fd);
    Napi::Error::New(info.Env(), "residentPages: cannot open " + file).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t length = (static_cast<size_t>(st.st_size) + page - 1) / page * page;
  void *mapped = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  std::vector<unsigned char> resident(length / page);
  double count = 0;
  if (mapped != MAP_FAILED && mincore(mapped, length, resident.data()) == 0)
    for (unsigned char r : resident) count += (r & 1) != 0 ? 1 : 0;
  if (mapped != MAP_FAILED) munmap(mapped, length);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("resident", Napi::Number::New(info.Env(), count));
  o.Set("pages", Napi::Number::New(info.Env(), static_cast<double>(resident.size())));
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("noCopyColdPages", Napi::Function::New(env, NoCopyColdPages));
  exports.Set("openLibrary", Napi::Function::New(env, OpenLibrary));
  exports.Set("closeLibrary", Napi::Function::New(env, CloseLibrary));
  exports.Set("residentPages", Napi::Function::New(env, ResidentPages));
  exports.Set("noCopyAfterUnmap", Napi::Function::New(env, NoCopyAfterUnmap));
  exports.Set("noCopyWithoutDeallocator", Napi::Function::New(env, NoCopyWithoutDeallocator));
  exports.Set("inheritableDoctorFiles", Napi::Function::New(env, InheritableDoctorFiles));
  exports.Set("query", Napi::Function::New(env, Query));
  exports.Set("startHammer", Napi::Function::New(env, StartHammer));
  exports.Set("stopHammer", Napi::Function::New(env, StopHammer));
  exports.Set("installForeignHook", Napi::Function::New(env, InstallForeignHook));
  exports.Set("removeForeignHook", Napi::Function::New(env, RemoveForeignHook));
  exports.Set("methodInfo", Napi::Function::New(env, MethodInfo));
  exports.Set("benchQueries", Napi::Function::New(env, BenchQueries));
  exports.Set("strayDevice", Napi::Function::New(env, StrayDevice));
  exports.Set("deviceCalls", Napi::Function::New(env, DeviceCalls));
  return exports;
}

}  // namespace

NODE_API_MODULE(sim_fixture, Init)
