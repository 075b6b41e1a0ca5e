// MTLGPUFamily values by name, as Apple's MTLDevice.h defines them. Numbers, not the SDK's enum constants, so the
// addon compiles against SDKs that predate Apple10 and Metal4. lib/families.ts holds the same table for TypeScript;
// test/native.test.ts asserts the two agree.
#pragma once

#include <cstddef>

namespace mcs {

struct FamilyInfo {
  const char *key;
  long value;
};

inline constexpr FamilyInfo kFamilies[] = {
    {"apple1", 1001},       {"apple2", 1002},       {"apple3", 1003},  {"apple4", 1004},  {"apple5", 1005},
    {"apple6", 1006},       {"apple7", 1007},       {"apple8", 1008},  {"apple9", 1009},  {"apple10", 1010},
    {"mac1", 2001},         {"mac2", 2002},         {"common1", 3001}, {"common2", 3002}, {"common3", 3003},
    {"macCatalyst1", 4001}, {"macCatalyst2", 4002}, {"metal3", 5001},  {"metal4", 5002},
};

inline constexpr size_t kFamilyCount = sizeof(kFamilies) / sizeof(kFamilies[0]);

inline constexpr long kAppleFamilyFirst = 1001;
inline constexpr long kAppleFamilyLast = 1999;

// Index into kFamilies, or -1 for a value this table does not name.
inline int familyIndex(long value) {
  for (size_t i = 0; i < kFamilyCount; i++) {
    if (kFamilies[i].value == value) return static_cast<int>(i);
  }
  return -1;
}

inline bool isAppleFamily(long value) { return value >= kAppleFamilyFirst && value <= kAppleFamilyLast; }

}  // namespace mcs
