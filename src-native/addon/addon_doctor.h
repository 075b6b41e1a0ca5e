// The N-API face of doctor (src-native/doctor/doctor.h): JavaScript options in, plain result objects out. Registered by
// addon.mm; types/binding.d.ts describes the shape.
#pragma once

#define NODE_ADDON_API_DISABLE_CPP_EXCEPTIONS
#include <napi.h>

namespace mcs {

// doctor(options: NativeDoctorOptions): NativeDoctorResult
Napi::Value Doctor(const Napi::CallbackInfo &info);

}  // namespace mcs
