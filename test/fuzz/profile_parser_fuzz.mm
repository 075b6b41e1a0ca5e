// libFuzzer target: the native profile parser (parseNativeProfile in src-native/engine/profile.mm), which the addon and
// the exec injector run on the compact profile text. TypeScript only ever sends text it made from a validated profile,
// but the injector reads it from the environment of a program anyone can start, so any bytes must give either a
// profile or an error, never a crash, and an accepted profile must keep the invariants the replacements rely on.
// Built and run by scripts/measure/native-coverage.mjs (clang-14 -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "../../src-native/engine/profile.h"

namespace {

[[noreturn]] void broken(const char *what) {
  fprintf(stderr, "profile_parser_fuzz: invariant broken: %s\n", what);
  abort();
}

void checkAccepted(const mcs::Profile &p) {
  if (p.appleFamilyMax != 0 && !mcs::isAppleFamily(p.appleFamilyMax)) broken("appleFamilyMax outside the Apple range");
  // The ranges TypeScript validates (lib/patch/profiles.ts), checked again by the parser.
  if (p.appleFamilyMax != 0 && p.appleFamilyMax > mcs::kProfileFamilyMaxLast)
    broken("appleFamilyMax above the known families");
  if (p.hasMaxThreadgroupMemory && (p.maxThreadgroupMemoryLength < mcs::kThreadgroupMemoryMin ||
                                    p.maxThreadgroupMemoryLength > mcs::kThreadgroupMemoryMax ||
                                    p.maxThreadgroupMemoryLength % mcs::kThreadgroupMemoryMultiple != 0)) {
    broken("threadgroup memory outside its range");
  }
  if (p.hasWorkingSet &&
      (p.recommendedMaxWorkingSetSize < mcs::kWorkingSetMin || p.recommendedMaxWorkingSetSize > mcs::kWorkingSetMax)) {
    broken("working set outside its range");
  }
  // The name the `name` hook answers: 1 to 128 printable ASCII bytes, or none at all.
  if (p.hasName && (p.name.empty() || p.name.size() > mcs::kMaxDeviceNameLength)) broken("a name of the wrong length");
  for (char c : p.name) {
    if (c < 0x20 || c > 0x7e) broken("a name byte that is not printable ASCII");
  }
  if (!p.hasName && !p.name.empty()) broken("a name without hasName");
  for (size_t i = 0; i < mcs::kFamilyCount; i++) {
    if (p.familyOverride[i] < -1 || p.familyOverride[i] > 1) broken("family override not -1, 0 or 1");
  }
  const long probes[] = {0, 1000, 1001, 1005, 1009, 1010, 1011, 1999, 2000, 2002, 3003, 5001, 5002, 9999, -1};
  for (long family : probes) {
    int decided = mcs::decidedFamilyAnswer(p, family);
    if (decided < -1 || decided > 1) broken("decidedFamilyAnswer not -1, 0 or 1");
    for (bool stock : {false, true}) {
      bool given = mcs::familyAnswer(p, family, stock);
      if (decided < 0 && given != stock) broken("an undecided family changed its stock answer");
      if (decided >= 0 && given != (decided == 1)) broken("a decided family ignored the decision");
      // raise only adds: a YES stays YES unless the profile names the family explicitly.
      int index = mcs::familyIndex(family);
      bool explicitAnswer = index >= 0 && p.familyOverride[index] >= 0;
      if (p.mode == mcs::ProfileMode::Raise && stock && !given && !explicitAnswer) broken("raise mode took a YES away");
    }
  }
  for (auto selector :
       {mcs::HookedSelector::MaxThreadgroupMemoryLength, mcs::HookedSelector::RecommendedMaxWorkingSetSize}) {
    for (uint64_t stock : {uint64_t{0}, uint64_t{32768}, UINT64_MAX}) {
      uint64_t configured = 0;
      bool has = mcs::configuredSize(p, selector, &configured);
      uint64_t given = mcs::sizeAnswer(p, selector, stock);
      if (!has && given != stock) broken("an unset size changed");
      if (has && p.mode == mcs::ProfileMode::Exact && given != configured) broken("exact mode did not set the size");
      if (has && p.mode == mcs::ProfileMode::Raise && given < stock) broken("raise mode lowered a size");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The parser takes a C string, as getenv() gives it: bytes after a NUL are not part of the text.
  std::string text(reinterpret_cast<const char *>(data), size);
  mcs::Profile profile;
  std::string error;
  if (!mcs::parseNativeProfile(text.c_str(), &profile, &error)) {
    if (error.empty()) broken("rejected without a message");
    return 0;
  }
  checkAccepted(profile);
  // The same text parses to the same profile.
  mcs::Profile again;
  std::string error2;
  if (!mcs::parseNativeProfile(text.c_str(), &again, &error2)) broken("accepted once, rejected the second time");
  if (again.appleFamilyMax != profile.appleFamilyMax || again.mode != profile.mode || again.trace != profile.trace ||
      again.hasMaxThreadgroupMemory != profile.hasMaxThreadgroupMemory ||
      again.maxThreadgroupMemoryLength != profile.maxThreadgroupMemoryLength ||
      again.hasWorkingSet != profile.hasWorkingSet ||
      again.recommendedMaxWorkingSetSize != profile.recommendedMaxWorkingSetSize || again.hasName != profile.hasName ||
      again.name != profile.name) {
    broken("two parses of one text differ");
  }
  return 0;
}
