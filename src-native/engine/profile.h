// The active profile and the replacement implementations that answer from it.
//
// A profile is one immutable value; applying another swaps a pointer, so a query running on another thread sees the
// old profile or the new one, never a mix. Profiles arrive already validated by TypeScript, in a compact text form
// (encodeNativeProfile in lib/patch/profiles.ts) that the exec injector also reads from its environment.
#pragma once

#include <objc/runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "families.h"
#include "swizzle.h"  // SlotImpFactory

namespace mcs {

enum class ProfileMode { Raise, Exact };

// The longest name a profile may answer (lib/patch/profiles.ts DEVICE_NAME_MAX).
inline constexpr size_t kMaxDeviceNameLength = 128;

struct Profile {
  long appleFamilyMax = 0;  // 0: no Apple ceiling
  bool hasMaxThreadgroupMemory = false;
  uint64_t maxThreadgroupMemoryLength = 0;
  bool hasWorkingSet = false;
  uint64_t recommendedMaxWorkingSetSize = 0;
  bool hasName = false;
  std::string name;     // what `name` answers when hasName: 1–128 printable ASCII characters
  id nameObject = nil;  // `name` as an NSString, made once for the active copy (setActiveProfile) and never freed
  ProfileMode mode = ProfileMode::Raise;
  bool trace = false;
  // Explicit answers per kFamilies index: -1 none, 0 NO, 1 YES.
  signed char familyOverride[kFamilyCount];
  std::string json;  // the normalised profile as JavaScript sent it, for status()

  Profile() {
    for (size_t i = 0; i < kFamilyCount; i++) familyOverride[i] = -1;
  }
};

// The ranges TypeScript validates a profile against (lib/patch/profiles.ts: APPLE_FAMILY_MAX_KNOWN,
// THREADGROUP_MEMORY_RANGE, WORKING_SET_RANGE). The parser checks them again, because the exec injector reads the text
// from an environment anyone can set; test/native/injector.test.ts feeds it each bound from the TypeScript constants.
inline constexpr long kProfileFamilyMaxLast = 1010;
inline constexpr uint64_t kThreadgroupMemoryMin = 1024;
inline constexpr uint64_t kThreadgroupMemoryMax = 1u << 20;
inline constexpr uint64_t kThreadgroupMemoryMultiple = 16;
inline constexpr uint64_t kWorkingSetMin = 64ull * 1024 * 1024;
inline constexpr uint64_t kWorkingSetMax = (1ull << 53) - 1;

// Parses the compact form `mcs1;max=1009;tg=65536;wss=-;mode=raise;trace=0;fam=5001:0;name=4170706c65204d31` (the
// name as hex, or `-`). Numbers are decimal digits only (no sign, space or other base). Returns false and sets
// `error` on anything unexpected or out of range.
bool parseNativeProfile(const char *text, Profile *out, std::string *error);

// 1 or 0 when the profile alone decides `supportsFamily:` for this family, -1 when the stock answer does. `index` is
// familyIndex(family), passed in so the hot path computes it once.
inline int decidedFamilyAnswerAt(const Profile &p, int index, long family) {
  if (index >= 0 && p.familyOverride[index] >= 0) return p.familyOverride[index];
  if (p.appleFamilyMax == 0 || !isAppleFamily(family)) return -1;
  if (family <= p.appleFamilyMax) return 1;
  return p.mode == ProfileMode::Exact ? 0 : -1;
}

inline int decidedFamilyAnswer(const Profile &p, long family) {
  return decidedFamilyAnswerAt(p, familyIndex(family), family);
}

// The answers a profile gives for a stock answer.
bool familyAnswer(const Profile &p, long family, bool stock);

// Swaps in a copy of `p` (retired profiles are kept alive for readers still holding them) or clears it.
void setActiveProfile(const Profile *p);
const Profile *activeProfile();

// The hooked selectors and the per-slot replacement for each. The first three are hooked on every patched class;
// `name` only on classes with a device that answers another name than the profile's (patch.h).
enum class HookedSelector {
  SupportsFamily = 0,
  MaxThreadgroupMemoryLength = 1,
  RecommendedMaxWorkingSetSize = 2,
  Name = 3
};
inline constexpr int kHookedSelectorCount = 4;
inline constexpr int kAnswerSelectorCount = 3;
SEL selectorFor(HookedSelector s);
const char *selectorName(HookedSelector s);
IMP replacementFor(HookedSelector s, int slot);
SlotImpFactory factoryFor(HookedSelector s);

// The size a profile sets for a size selector, if it sets one, and the answer it gives for a stock size.
bool configuredSize(const Profile &p, HookedSelector s, uint64_t *out);
uint64_t sizeAnswer(const Profile &p, HookedSelector s, uint64_t stock);

// While alive on a thread, hooked queries on that thread answer stock: used to read the unpatched device.
class StockAnswersScope {
 public:
  StockAnswersScope();
  ~StockAnswersScope();
  StockAnswersScope(const StockAnswersScope &) = delete;
  StockAnswersScope &operator=(const StockAnswersScope &) = delete;
};

// While alive on a thread, hooked queries on that thread are not traced: the library's own probes (before, after,
// verification) must not show up among the program's queries.
class UntracedScope {
 public:
  UntracedScope();
  ~UntracedScope();
  UntracedScope(const UntracedScope &) = delete;
  UntracedScope &operator=(const UntracedScope &) = delete;
};

// Trace: per hooked selector and family asked, calls and the last stock and given answers.
struct TraceRow {
  HookedSelector selector;
  long family;  // 0 for the size queries and `name`
  uint64_t calls;
  uint64_t lastStock;
  uint64_t lastGiven;
  std::string stockName;  // `name` only: the last names answered stock and given
  std::string givenName;
};

// An NSString's UTF-8 text, copied without autoreleasing anything (a hooked query may run on a thread without a
// pool); empty for nil.
std::string utf8Text(id string);
std::vector<TraceRow> traceRows();
void resetTrace();
uint64_t traceDropped();

}  // namespace mcs
