// The simulation's control, for tests only (build/test/sim_control.node, never shipped): loads another snapshot into
// the simulated Metal of this process. It links the same libMetal.so as the addon, so it controls the instance the
// addon queries. Tests reach it through useSimulation() (test/support/simulation.ts), which checks the selector and
// the addon's state first.
#define NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS
#include <napi.h>

#import <Foundation/Foundation.h>
#import <MetalSim/MetalSim.h>

#include <string>

namespace {

// loadSnapshot(selector: string) -> null when it loaded, else why not (and then no device is loaded).
Napi::Value LoadSnapshot(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "loadSnapshot(selector) takes a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string selector = info[0].As<Napi::String>().Utf8Value();
  const char *problem = MTLSimLoadSnapshot(selector.c_str());
  return problem == NULL ? env.Null() : Napi::Value(Napi::String::New(env, problem));
}

// loads() -> how many times this process loaded a snapshot (or selected none).
Napi::Value Loads(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<double>(MTLSimGetLoads()));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("loadSnapshot", Napi::Function::New(env, LoadSnapshot));
  exports.Set("loads", Napi::Function::New(env, Loads));
  return exports;
}

}  // namespace

NODE_API_MODULE(sim_control, Init)
