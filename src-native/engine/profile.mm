#include "profile.h"

#import <Foundation/Foundation.h>

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

#include "swizzle.h"

#if defined(__linux__)
// Initial-exec keeps the per-call check to one load; the addon is small enough for the static TLS reserve.
#define MCS_FAST_TLS __attribute__((tls_model("initial-exec")))
#else
#define MCS_FAST_TLS
#endif

namespace mcs {
namespace {

std::atomic<const Profile *> gActive{nullptr};
// Immortal ([[clang::no_destroy]]): exit() runs static destructors while other threads may still query a hooked
// device, and on macOS libc++'s std::mutex and std::vector have real destructors. A hooked query or an apply racing
// exit would then use a destroyed object (a destroyed mutex makes libc++ throw, and the process aborts).
[[clang::no_destroy]] std::mutex gRetiredMutex;
// Profiles are never freed: a query on another thread may still hold the previous pointer, and a process applies
// a handful of profiles in its life. The cost is one small struct per apply.
[[clang::no_destroy]] std::vector<std::unique_ptr<Profile>> gRetired;

thread_local int tlsStockDepth MCS_FAST_TLS = 0;
thread_local int tlsUntracedDepth MCS_FAST_TLS = 0;
// How many scopes are open in the whole process. A hooked query reads its thread's depth only while some thread has
// one open: the thread-local read costs a call on macOS (a tlv thunk). A thread always sees its own increment (one
// atomic object, sequenced before), so a scope is never missed by the thread that opened it; another thread's scope
// only sends a query on to its own depth, which is 0.
std::atomic<int> gStockScopes{0};
std::atomic<int> gUntracedScopes{0};

inline bool answeringStock() {
  return gStockScopes.load(std::memory_order_relaxed) != 0 && tlsStockDepth != 0;
}
inline bool untraced() {
  return gUntracedScopes.load(std::memory_order_relaxed) != 0 && tlsUntracedDepth != 0;
}

// Decimal digits only: strtoull alone would take leading white space and a sign ("-5" wraps to 2^64 - 5).
bool parseUnsigned(const std::string &s, uint64_t *out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

bool parseFamilies(const std::string &list, Profile *out, std::string *error) {
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = item.find(':');
    uint64_t value = 0, answer = 0;
    if (colon == std::string::npos || !parseUnsigned(item.substr(0, colon), &value) ||
        !parseUnsigned(item.substr(colon + 1), &answer) || answer > 1) {
      *error = "bad family answer '" + item + "'";
      return false;
    }
    int index = familyIndex(static_cast<long>(value));
    if (index < 0) {
      *error = "unknown family value " + std::to_string(value);
      return false;
    }
    out->familyOverride[index] = static_cast<signed char>(answer);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The name arrives as lower-case hex (lib/patch/profiles.ts), so the text holds no separator; each byte must be
// printable ASCII, as TypeScript validated.
bool parseName(const std::string &hex, Profile *out, std::string *error) {
  if (hex.empty() || hex.size() % 2 != 0 || hex.size() > 2 * kMaxDeviceNameLength) {
    *error = "name must be 1 to " + std::to_string(kMaxDeviceNameLength) + " bytes as hex";
    return false;
  }
  std::string name;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hexDigit(hex[i]), lo = hexDigit(hex[i + 1]);
    int byte = hi * 16 + lo;
    if (hi < 0 || lo < 0 || byte < 0x20 || byte > 0x7e) {
      *error = "name must be printable ASCII as lower-case hex";
      return false;
    }
    name.push_back(static_cast<char>(byte));
  }
  out->hasName = true;
  out->name = name;
  return true;
}

bool applyField(const std::string &key, const std::string &value, Profile *out, std::string *error) {
  uint64_t n = 0;
  if (key == "max") {
    if (value == "-") return true;
    if (!parseUnsigned(value, &n) || n < static_cast<uint64_t>(kAppleFamilyFirst) ||
        n > static_cast<uint64_t>(kProfileFamilyMaxLast)) {
      *error = "max must be an Apple family value from " + std::to_string(kAppleFamilyFirst) + " to " +
               std::to_string(kProfileFamilyMaxLast);
      return false;
    }
    out->appleFamilyMax = static_cast<long>(n);
  } else if (key == "tg") {
    if (value == "-") return true;
    if (!parseUnsigned(value, &n) || n < kThreadgroupMemoryMin || n > kThreadgroupMemoryMax ||
        n % kThreadgroupMemoryMultiple != 0) {
      *error = "tg must be a byte count from " + std::to_string(kThreadgroupMemoryMin) + " to " +
               std::to_string(kThreadgroupMemoryMax) + ", a multiple of " + std::to_string(kThreadgroupMemoryMultiple);
      return false;
    }
    out->hasMaxThreadgroupMemory = true;
    out->maxThreadgroupMemoryLength = n;
  } else if (key == "wss") {
    if (value == "-") return true;
    if (!parseUnsigned(value, &n) || n < kWorkingSetMin || n > kWorkingSetMax) {
      *error =
          "wss must be a byte count from " + std::to_string(kWorkingSetMin) + " to " + std::to_string(kWorkingSetMax);
      return false;
    }
    out->hasWorkingSet = true;
    out->recommendedMaxWorkingSetSize = n;
  } else if (key == "mode") {
    if (value != "raise" && value != "exact") {
      *error = "mode must be raise or exact";
      return false;
    }
    out->mode = value == "exact" ? ProfileMode::Exact : ProfileMode::Raise;
  } else if (key == "trace") {
    if (value != "0" && value != "1") {
      *error = "trace must be 0 or 1";
      return false;
    }
    out->trace = value == "1";
  } else if (key == "fam") {
    return value.empty() || parseFamilies(value, out, error);
  } else if (key == "name") {
    return value == "-" || parseName(value, out, error);
  } else {
    *error = "unknown field '" + key + "'";
    return false;
  }
  return true;
}

// ---- trace ----

// The last names `name` answered stock and given: strings, so they are kept under a lock. Only a traced `name`
// query takes it, and engines ask the name once at initialisation.
[[clang::no_destroy]] std::mutex gNameTraceMutex;
[[clang::no_destroy]] std::string gNameStock;
[[clang::no_destroy]] std::string gNameGiven;

constexpr int kTraceSlots = 256;

// One cache line per slot: threads tracing different queries never write to the same line. A fixed slot's calls are
// counted per thread (ThreadCounts) and `calls` here is unused; a hashed slot counts here.
struct alignas(64) TraceSlot {
  std::atomic<uint64_t> key{0};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> lastStock{0};
  std::atomic<uint64_t> lastGiven{0};
};

// Every family the table names and each size query has a fixed slot, found by arithmetic; only families the table
// does not name go to the hashed slots.
constexpr int kFixedTraceSlots = static_cast<int>(kFamilyCount) + kHookedSelectorCount - 1;
TraceSlot gFixedTrace[kFixedTraceSlots];
TraceSlot gTrace[kTraceSlots];
std::atomic<uint64_t> gTraceDropped{0};

// The fixed slots' call counts of one thread: only that thread writes them, so a count is a plain load and store
// (exact, with no locked read-modify-write on the hot path), and a reader adds up every block. A block outlives its
// thread: at thread exit it goes to a free list and the next thread that traces takes it over, counts included, so
// totals never drop and the number of blocks stays at the most threads tracing at once. Never freed, like profiles.
struct ThreadCounts {
  std::atomic<uint64_t> calls[kFixedTraceSlots];
  ThreadCounts *next = nullptr;      // every block ever made; set before the block is published, then immutable
  ThreadCounts *nextFree = nullptr;  // under gCountsMutex
  char pad[64];                      // keeps the next allocation's counters off this block's last cache line
  ThreadCounts() {
    for (auto &c : calls) c.store(0, std::memory_order_relaxed);
  }
};
std::atomic<ThreadCounts *> gAllCounts{nullptr};
[[clang::no_destroy]] std::mutex gCountsMutex;
ThreadCounts *gFreeCounts = nullptr;
// What resetTrace() saw per fixed slot: the counts shown are the totals since then.
std::atomic<uint64_t> gResetBase[kFixedTraceSlots];
thread_local ThreadCounts *tlsCounts MCS_FAST_TLS = nullptr;
pthread_key_t gCountsKey;
pthread_once_t gCountsKeyOnce = PTHREAD_ONCE_INIT;

// Runs at thread exit (a pthread key destructor, so no C++ thread_local destructor and no guard on the hot path).
void releaseThreadCounts(void *block) {
  std::lock_guard<std::mutex> lock(gCountsMutex);
  auto *counts = static_cast<ThreadCounts *>(block);
  counts->nextFree = gFreeCounts;
  gFreeCounts = counts;
  // A query traced by a later exit-time destructor on this thread takes a block again (and registers it again).
  tlsCounts = nullptr;
}

void makeCountsKey() {
  pthread_key_create(&gCountsKey, releaseThreadCounts);
}

__attribute__((noinline)) ThreadCounts *takeThreadCounts() {
  pthread_once(&gCountsKeyOnce, makeCountsKey);
  ThreadCounts *counts = nullptr;
  {
    std::lock_guard<std::mutex> lock(gCountsMutex);
    if (gFreeCounts != nullptr) {
      counts = gFreeCounts;
      gFreeCounts = counts->nextFree;
    } else {
      counts = new ThreadCounts();
      counts->next = gAllCounts.load(std::memory_order_relaxed);
      gAllCounts.store(counts, std::memory_order_release);
    }
  }
  pthread_setspecific(gCountsKey, counts);
  tlsCounts = counts;
  return counts;
}

uint64_t fixedCalls(int fixed) {
  uint64_t sum = 0;
  for (ThreadCounts *c = gAllCounts.load(std::memory_order_acquire); c != nullptr; c = c->next) {
    sum += c->calls[fixed].load(std::memory_order_relaxed);
  }
  return sum;
}

uint64_t traceKey(HookedSelector s, long family) {
  return (static_cast<uint64_t>(s) + 1) << 32 | static_cast<uint32_t>(family);
}

// The fixed slot of a size query; a family's is its familyIndex().
constexpr int sizeTraceSlot(HookedSelector s) {
  return static_cast<int>(kFamilyCount) + static_cast<int>(s) - 1;
}

// The last answers are stored only when they change: a query asked again and again (the usual case) then only reads
// the line, and threads asking the same query do not pass it back and forth.
inline void noteLast(TraceSlot &slot, uint64_t stock, uint64_t given) {
  if (slot.lastStock.load(std::memory_order_relaxed) != stock) slot.lastStock.store(stock, std::memory_order_relaxed);
  if (slot.lastGiven.load(std::memory_order_relaxed) != given) slot.lastGiven.store(given, std::memory_order_relaxed);
}

// Lock-free: a hashed slot is claimed once with a compare-and-swap on its key, then only counted into. Out of line:
// only families the table does not name come here.
__attribute__((noinline)) void recordHashedTrace(HookedSelector s, long family, uint64_t stock, uint64_t given) {
  uint64_t key = traceKey(s, family);
  uint32_t start = static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 56);
  for (int probe = 0; probe < kTraceSlots; probe++) {
    TraceSlot &slot = gTrace[(start + probe) % kTraceSlots];
    uint64_t seen = slot.key.load(std::memory_order_acquire);
    if (seen == 0) {
      uint64_t expected = 0;
      if (slot.key.compare_exchange_strong(expected, key, std::memory_order_acq_rel)) {
        seen = key;
      } else {
        seen = expected;
      }
    }
    if (seen != key) continue;
    slot.calls.fetch_add(1, std::memory_order_relaxed);
    noteLast(slot, stock, given);
    return;
  }
  gTraceDropped.fetch_add(1, std::memory_order_relaxed);
}

// `fixed`: the query's fixed slot, or -1. A fixed slot is claimed by storing its only possible key.
inline void recordTrace(HookedSelector s, int fixed, long family, uint64_t stock, uint64_t given) {
  if (fixed < 0) {
    recordHashedTrace(s, family, stock, given);
    return;
  }
  TraceSlot &slot = gFixedTrace[fixed];
  if (slot.key.load(std::memory_order_relaxed) == 0) slot.key.store(traceKey(s, family), std::memory_order_release);
  ThreadCounts *counts = tlsCounts;
  if (counts == nullptr) counts = takeThreadCounts();
  std::atomic<uint64_t> &calls = counts->calls[fixed];
  calls.store(calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  noteLast(slot, stock, given);
}

// ---- replacements, one function per slot ----

// The profile a slot's replacement answers from: the active one while its hook is installed, none for a restored
// added hook left as a pass-through.
inline const Profile *answeringProfile(int slot) {
  return hookLive(slot) ? gActive.load(std::memory_order_acquire) : nullptr;
}

template <int Slot>
BOOL supportsFamilyHook(id self, SEL cmd, NSInteger family) {
  using Original = BOOL (*)(id, SEL, NSInteger);
  // One load: everything below answers from this profile, whatever another thread swaps in meanwhile.
  const Profile *p = answeringProfile(Slot);
  if (p == nullptr || answeringStock()) {
    return reinterpret_cast<Original>(originalImplementation(Slot))(self, cmd, family);
  }
  int index = familyIndex(static_cast<long>(family));
  int decided = decidedFamilyAnswerAt(*p, index, static_cast<long>(family));
  // When the profile alone decides (a family within the ceiling, an explicit answer, exact mode), the stock answer
  // cannot change the result, so it is only asked for the trace.
  if (decided >= 0 && !p->trace) return decided == 1 ? YES : NO;
  BOOL stock = reinterpret_cast<Original>(originalImplementation(Slot))(self, cmd, family);
  BOOL given = decided < 0 ? stock : (decided == 1 ? YES : NO);
  if (p->trace && !untraced()) {
    recordTrace(HookedSelector::SupportsFamily, index, static_cast<long>(family), stock, given);
  }
  return given;
}

// Both size queries share one replacement: the size type and the selector are template arguments.
template <typename Size, HookedSelector Selector, int Slot>
Size sizeHook(id self, SEL cmd) {
  using Original = Size (*)(id, SEL);
  const Profile *p = answeringProfile(Slot);
  bool answering = p != nullptr && !answeringStock();
  uint64_t configured = 0;
  if (answering && !p->trace && p->mode == ProfileMode::Exact && configuredSize(*p, Selector, &configured)) {
    return static_cast<Size>(configured);
  }
  Size stock = reinterpret_cast<Original>(originalImplementation(Slot))(self, cmd);
  if (!answering) return stock;
  Size given = static_cast<Size>(sizeAnswer(*p, Selector, stock));
  if (p->trace && !untraced()) recordTrace(Selector, sizeTraceSlot(Selector), 0, stock, given);
  return given;
}

template <int Slot>
NSUInteger maxThreadgroupMemoryHook(id self, SEL cmd) {
  return sizeHook<NSUInteger, HookedSelector::MaxThreadgroupMemoryLength, Slot>(self, cmd);
}

template <int Slot>
uint64_t workingSetHook(id self, SEL cmd) {
  return sizeHook<uint64_t, HookedSelector::RecommendedMaxWorkingSetSize, Slot>(self, cmd);
}

template <int Slot>
id nameHook(id self, SEL cmd) {
  using Original = id (*)(id, SEL);
  const Profile *p = answeringProfile(Slot);
  if (p == nullptr || answeringStock()) return reinterpret_cast<Original>(originalImplementation(Slot))(self, cmd);
  if (!p->trace && p->nameObject != nil) return p->nameObject;
  id stock = reinterpret_cast<Original>(originalImplementation(Slot))(self, cmd);
  id given = p->nameObject != nil ? p->nameObject : stock;
  if (p->trace && !untraced()) {
    // Converting may autorelease temporaries, and an engine may ask outside any pool. The getter's own result stays
    // outside this pool: it is the caller's, and may be what this hook returns.
    std::string stockText, givenText;
    @autoreleasepool {
      stockText = utf8Text(stock);
      givenText = utf8Text(given);
    }
    recordTrace(HookedSelector::Name, sizeTraceSlot(HookedSelector::Name), 0, 0, given == stock ? 0 : 1);
    std::lock_guard<std::mutex> lock(gNameTraceMutex);
    gNameStock = stockText;
    gNameGiven = givenText;
  }
  return given;
}

template <size_t... I>
IMP nameImp(int slot, std::index_sequence<I...>) {
  static const IMP table[] = {reinterpret_cast<IMP>(&nameHook<I>)...};
  return table[slot];
}

template <size_t... I>
IMP supportsFamilyImp(int slot, std::index_sequence<I...>) {
  static const IMP table[] = {reinterpret_cast<IMP>(&supportsFamilyHook<I>)...};
  return table[slot];
}
template <size_t... I>
IMP maxThreadgroupMemoryImp(int slot, std::index_sequence<I...>) {
  static const IMP table[] = {reinterpret_cast<IMP>(&maxThreadgroupMemoryHook<I>)...};
  return table[slot];
}
template <size_t... I>
IMP workingSetImp(int slot, std::index_sequence<I...>) {
  static const IMP table[] = {reinterpret_cast<IMP>(&workingSetHook<I>)...};
  return table[slot];
}

IMP supportsFamilyFactory(int slot) {
  return supportsFamilyImp(slot, std::make_index_sequence<kMaxHooks>{});
}
IMP maxThreadgroupMemoryFactory(int slot) {
  return maxThreadgroupMemoryImp(slot, std::make_index_sequence<kMaxHooks>{});
}
IMP workingSetFactory(int slot) {
  return workingSetImp(slot, std::make_index_sequence<kMaxHooks>{});
}
IMP nameFactory(int slot) {
  return nameImp(slot, std::make_index_sequence<kMaxHooks>{});
}

}  // namespace

bool parseNativeProfile(const char *text, Profile *out, std::string *error) {
  std::string s(text == nullptr ? "" : text);
  if (s.compare(0, 5, "mcs1;") != 0 && s != "mcs1") {
    *error = "profile text must start with 'mcs1;'";
    return false;
  }
  size_t start = 5;
  // Each field once: a repeated one would keep whichever value the parser happened to honour. Only known keys get
  // here (an unknown one is an error), so the list stays short.
  std::vector<std::string> seen;
  while (start < s.size()) {
    size_t semi = s.find(';', start);
    std::string field = s.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
    size_t eq = field.find('=');
    if (eq == std::string::npos) {
      *error = "field '" + field + "' has no '='";
      return false;
    }
    std::string key = field.substr(0, eq);
    for (const std::string &k : seen) {
      if (k == key) {
        *error = "field '" + key + "' is given twice";
        return false;
      }
    }
    if (!applyField(key, field.substr(eq + 1), out, error)) return false;
    seen.push_back(key);
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  return true;
}

bool familyAnswer(const Profile &p, long family, bool stock) {
  int decided = decidedFamilyAnswer(p, family);
  return decided < 0 ? stock : decided == 1;
}

bool configuredSize(const Profile &p, HookedSelector s, uint64_t *out) {
  if (s == HookedSelector::MaxThreadgroupMemoryLength && p.hasMaxThreadgroupMemory) {
    *out = p.maxThreadgroupMemoryLength;
    return true;
  }
  if (s == HookedSelector::RecommendedMaxWorkingSetSize && p.hasWorkingSet) {
    *out = p.recommendedMaxWorkingSetSize;
    return true;
  }
  return false;
}

uint64_t sizeAnswer(const Profile &p, HookedSelector s, uint64_t stock) {
  uint64_t configured = 0;
  if (!configuredSize(p, s, &configured)) return stock;
  if (p.mode == ProfileMode::Exact) return configured;
  return stock > configured ? stock : configured;
}

void setActiveProfile(const Profile *p) {
  if (p == nullptr) {
    gActive.store(nullptr, std::memory_order_release);
    return;
  }
  std::lock_guard<std::mutex> lock(gRetiredMutex);
  gRetired.push_back(std::make_unique<Profile>(*p));
  Profile *stored = gRetired.back().get();
  // Immortal like the profile itself: a query on another thread may still return it after the next swap.
  stored->nameObject = stored->hasName ? [[NSString alloc] initWithBytes:stored->name.data()
                                                                  length:stored->name.size()
                                                                encoding:NSUTF8StringEncoding]
                                       : nil;
  gActive.store(stored, std::memory_order_release);
}

const Profile *activeProfile() {
  return gActive.load(std::memory_order_acquire);
}

SEL selectorFor(HookedSelector s) {
  switch (s) {
    case HookedSelector::SupportsFamily:
      return sel_registerName("supportsFamily:");
    case HookedSelector::MaxThreadgroupMemoryLength:
      return sel_registerName("maxThreadgroupMemoryLength");
    case HookedSelector::RecommendedMaxWorkingSetSize:
      return sel_registerName("recommendedMaxWorkingSetSize");
    case HookedSelector::Name:
      return sel_registerName("name");
  }
  return nullptr;
}

const char *selectorName(HookedSelector s) {
  switch (s) {
    case HookedSelector::SupportsFamily:
      return "supportsFamily:";
    case HookedSelector::MaxThreadgroupMemoryLength:
      return "maxThreadgroupMemoryLength";
    case HookedSelector::RecommendedMaxWorkingSetSize:
      return "recommendedMaxWorkingSetSize";
    case HookedSelector::Name:
      return "name";
  }
  return "";
}

SlotImpFactory factoryFor(HookedSelector s) {
  switch (s) {
    case HookedSelector::SupportsFamily:
      return supportsFamilyFactory;
    case HookedSelector::MaxThreadgroupMemoryLength:
      return maxThreadgroupMemoryFactory;
    case HookedSelector::RecommendedMaxWorkingSetSize:
      return workingSetFactory;
    case HookedSelector::Name:
      return nameFactory;
  }
  return nullptr;
}

IMP replacementFor(HookedSelector s, int slot) {
  return factoryFor(s)(slot);
}

StockAnswersScope::StockAnswersScope() {
  gStockScopes.fetch_add(1, std::memory_order_relaxed);
  tlsStockDepth++;
}
StockAnswersScope::~StockAnswersScope() {
  tlsStockDepth--;
  gStockScopes.fetch_sub(1, std::memory_order_relaxed);
}
UntracedScope::UntracedScope() {
  gUntracedScopes.fetch_add(1, std::memory_order_relaxed);
  tlsUntracedDepth++;
}
UntracedScope::~UntracedScope() {
  tlsUntracedDepth--;
  gUntracedScopes.fetch_sub(1, std::memory_order_relaxed);
}

std::vector<TraceRow> traceRows() {
  std::vector<TraceRow> rows;
  // `fixed`: the slot's index in gFixedTrace, or -1 for a hashed slot.
  auto add = [&rows](const TraceSlot &slot, int fixed) {
    uint64_t key = slot.key.load(std::memory_order_acquire);
    if (key == 0) return;
    auto selector = static_cast<HookedSelector>((key >> 32) - 1);
    uint64_t calls = slot.calls.load(std::memory_order_relaxed);
    if (fixed >= 0) {
      // A reset racing this read can leave its base above the sum read before it.
      uint64_t total = fixedCalls(fixed), base = gResetBase[fixed].load(std::memory_order_relaxed);
      calls = total > base ? total - base : 0;
    }
    TraceRow row{selector,
                 static_cast<long>(static_cast<int32_t>(key & 0xffffffffu)),
                 calls,
                 slot.lastStock.load(std::memory_order_relaxed),
                 slot.lastGiven.load(std::memory_order_relaxed),
                 std::string(),
                 std::string()};
    if (selector == HookedSelector::Name) {
      std::lock_guard<std::mutex> lock(gNameTraceMutex);
      row.stockName = gNameStock;
      row.givenName = gNameGiven;
    }
    rows.push_back(row);
  };
  for (int i = 0; i < kFixedTraceSlots; i++) add(gFixedTrace[i], i);
  for (const TraceSlot &slot : gTrace) add(slot, -1);
  return rows;
}

// Clears counts, not claimed keys: a concurrent recorder may be mid-update on a slot.
void resetTrace() {
  for (int i = 0; i < kFixedTraceSlots; i++) gResetBase[i].store(fixedCalls(i), std::memory_order_relaxed);
  for (TraceSlot &slot : gTrace) slot.calls.store(0, std::memory_order_relaxed);
  gTraceDropped.store(0, std::memory_order_relaxed);
}

uint64_t traceDropped() {
  return gTraceDropped.load(std::memory_order_relaxed);
}

std::string utf8Text(id string) {
  if (string == nil) return std::string();
  NSString *text = (NSString *)string;
  NSUInteger length = [text lengthOfBytesUsingEncoding:NSUTF8StringEncoding];
  std::vector<char> buffer(length + 1, '\0');
  if (![text getCString:buffer.data() maxLength:buffer.size() encoding:NSUTF8StringEncoding]) return std::string();
  return std::string(buffer.data(), length);
}

}  // namespace mcs
