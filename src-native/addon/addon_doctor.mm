// Converts doctor's options and results between JavaScript and the C++ structs of doctor.h, nothing else. lib/
// validates options before they get here; the checks below only keep a wrong call from crashing the process.
#include "addon_doctor.h"

#include <cmath>
#include <string>

#include "../doctor/doctor.h"

namespace mcs {
namespace {

Napi::Value throwDoctorError(Napi::Env env, const char *code, const std::string &message, bool typeError) {
  Napi::Error error = typeError ? Napi::TypeError::New(env, message) : Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  error.ThrowAsJavaScriptException();
  return env.Undefined();
}

bool nonNegativeInteger(Napi::Value v, uint64_t *out) {
  if (!v.IsNumber()) return false;
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < 0 || d != std::floor(d) || d > 9007199254740991.0) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

// Fills `options`; returns the name of the first field that is wrong, or an empty string.
std::string readOptions(Napi::Object o, DoctorOptions *options) {
  uint64_t device = 0;
  if (!nonNegativeInteger(o.Get("device"), &device) || device > 1024) return "device must be a device index";
  options->device = static_cast<int>(device);

  Napi::Value probes = o.Get("probes");
  if (!probes.IsArray()) return "probes must be an array of probe ids";
  Napi::Array list = probes.As<Napi::Array>();
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value v = list.Get(i);
    DoctorProbe probe;
    if (!v.IsString() || !parseDoctorProbe(v.As<Napi::String>().Utf8Value(), &probe)) {
      return "probes[" + std::to_string(i) + "] is not a probe id";
    }
    options->probes.push_back(probe);
  }

  Napi::Value timeout = o.Get("timeoutMs");
  if (!timeout.IsNumber()) return "timeoutMs must be a number";
  options->timeoutMs = timeout.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(options->timeoutMs) || options->timeoutMs <= 0) return "timeoutMs must be a positive number";

  Napi::Value sizes = o.Get("threadgroupSizes");
  if (!sizes.IsArray()) return "threadgroupSizes must be an array of byte counts";
  Napi::Array sizeList = sizes.As<Napi::Array>();
  for (uint32_t i = 0; i < sizeList.Length(); i++) {
    uint64_t size = 0;
    if (!nonNegativeInteger(sizeList.Get(i), &size) || size == 0) {
      return "threadgroupSizes[" + std::to_string(i) + "] must be a positive integer";
    }
    if (!options->threadgroupSizes.empty() && size <= options->threadgroupSizes.back()) {
      return "threadgroupSizes must ascend";
    }
    options->threadgroupSizes.push_back(size);
  }

  uint64_t groups = 0;
  if (!nonNegativeInteger(o.Get("threadgroupGroups"), &groups) || groups == 0 || groups > 65535) {
    return "threadgroupGroups must be a count of threadgroups (1-65535)";
  }
  options->threadgroupGroups = static_cast<uint32_t>(groups);
  if (!nonNegativeInteger(o.Get("stockThreadgroupMemory"), &options->stockThreadgroupMemory)) {
    return "stockThreadgroupMemory must be a byte count";
  }
  Napi::Value provable = o.Get("provableThreadgroupMemory");
  if (!provable.IsUndefined() && !nonNegativeInteger(provable, &options->provableThreadgroupMemory)) {
    return "provableThreadgroupMemory must be a byte count";
  }
  Napi::Value above = o.Get("aboveStockThreadgroupMemory");
  if (!above.IsBoolean()) return "aboveStockThreadgroupMemory must be a boolean";
  options->aboveStockThreadgroupMemory = above.As<Napi::Boolean>().Value();

  Napi::Value file = o.Get("mmapFile");
  if (file.IsString()) {
    options->mmapFile = file.As<Napi::String>().Utf8Value();
  } else if (!file.IsNull() && !file.IsUndefined()) {
    return "mmapFile must be a path or null";
  }
  if (!nonNegativeInteger(o.Get("mmapSize"), &options->mmapSize)) return "mmapSize must be a byte count";
  Napi::Value temp = o.Get("tempDir");
  if (!temp.IsString() || temp.As<Napi::String>().Utf8Value().empty()) return "tempDir must be a directory path";
  options->tempDir = temp.As<Napi::String>().Utf8Value();
  return "";
}

template <typename T>
Napi::Value numberOrNull(Napi::Env env, const std::optional<T> &v) {
  return v ? Napi::Value(Napi::Number::New(env, static_cast<double>(*v))) : env.Null();
}

Napi::Object outcomeObject(Napi::Env env, const ProbeOutcome &outcome) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("id", Napi::String::New(env, doctorProbeId(outcome.id)));
  o.Set("status", Napi::String::New(env, doctorStatusName(outcome.status)));
  o.Set("detail", Napi::String::New(env, outcome.detail));
  o.Set("ms", Napi::Number::New(env, outcome.ms));
  o.Set("compileMs", Napi::Number::New(env, outcome.compileMs));
  o.Set("buildFailed", Napi::Boolean::New(env, outcome.buildFailed));
  o.Set("commandBufferError", numberOrNull(env, outcome.commandBufferError));
  o.Set("gpuTimedOut", Napi::Boolean::New(env, outcome.gpuTimedOut));
  o.Set("provenThreadgroupMemory", numberOrNull(env, outcome.provenThreadgroupMemory));
  o.Set("acceptedThreadgroupMemory", numberOrNull(env, outcome.acceptedThreadgroupMemory));
  o.Set("failedThreadgroupMemory", numberOrNull(env, outcome.failedThreadgroupMemory));
  o.Set("bufferLength", numberOrNull(env, outcome.bufferLength));
  o.Set("maxAbsError", numberOrNull(env, outcome.maxAbsError));
  return o;
}

}  // namespace

Napi::Value Doctor(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    return throwDoctorError(env, "ERR_INVALID_ARGUMENT", "doctor(options) takes an options object", true);
  }
  DoctorOptions options;
  std::string problem = readOptions(info[0].As<Napi::Object>(), &options);
  if (!problem.empty()) return throwDoctorError(env, "ERR_INVALID_ARGUMENT", "doctor(options): " + problem, true);

  DoctorResult result = runDoctor(options);
  if (!result.ok) return throwDoctorError(env, result.errorCode.c_str(), result.message, false);

  Napi::Object device = Napi::Object::New(env);
  device.Set("index", Napi::Number::New(env, result.device.index));
  device.Set("name", Napi::String::New(env, result.device.name));
  device.Set("className", Napi::String::New(env, result.device.className));
  device.Set("registryId", numberOrNull(env, result.device.registryId));
  Napi::Array outcomes = Napi::Array::New(env, result.outcomes.size());
  for (size_t i = 0; i < result.outcomes.size(); i++)
    outcomes.Set(static_cast<uint32_t>(i), outcomeObject(env, result.outcomes[i]));
  Napi::Object out = Napi::Object::New(env);
  out.Set("device", device);
  out.Set("outcomes", outcomes);
  return out;
}

}  // namespace mcs
