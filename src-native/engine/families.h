// MTLGPUFamily values by name, as Apple's MTLDevice.h defines them. Numbers, not the SDK's enum constants, so the
// addon compiles against SDKs that predate Apple10 and Metal4. lib/core/families.ts holds the same table for
// TypeScript; test/device/probe.test.ts asserts the two agree.
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

// Index into kFamilies, or -1 for a value this table does not name. Arithmetic rather than a scan: it runs on every
// hooked supportsFamily: call. The static_asserts tie it to the table's order.
inline constexpr int familyIndex(long value) {
  if (value >= 1001 && value <= 1010) return static_cast<int>(value - 1001);
  if (value >= 2001 && value <= 2002) return static_cast<int>(10 + value - 2001);
  if (value >= 3001 && value <= 3003) return static_cast<int>(12 + value - 3001);
  if (value >= 4001 && value <= 4002) return static_cast<int>(15 + value - 4001);
  if (value >= 5001 && value <= 5002) return static_cast<int>(17 + value - 5001);
  return -1;
}

inline constexpr bool familyIndexMatchesTable() {
  for (size_t i = 0; i < kFamilyCount; i++) {
    if (familyIndex(kFamilies[i].value) != static_cast<int>(i)) return false;
  }
  return familyIndex(1000) == -1 && familyIndex(1011) == -1 && familyIndex(2003) == -1 && familyIndex(5003) == -1;
}
static_assert(familyIndexMatchesTable(), "familyIndex must follow kFamilies");

inline bool isAppleFamily(long value) {
  return value >= kAppleFamilyFirst && value <= kAppleFamilyLast;
}

}  // namespace mcs
