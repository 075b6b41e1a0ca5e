// The exec injector: a library loaded into an arbitrary program (DYLD_INSERT_LIBRARIES on macOS, LD_PRELOAD in the
// Linux test build) that patches device classes the moment the program first obtains a device. It interposes the
// public MTLCreateSystemDefaultDevice / MTLCopyAllDevices, so it needs no private selector.
//
// It never writes to the program's stdout or stderr. The CLI hands it these environment variables:
//   METAL_CAP_SHIM_PROFILE_NATIVE  the validated profile in its compact form (lib/patch/profiles.ts)
//   METAL_CAP_SHIM_STATUS_FD       a pipe for "PID loaded" / "PID patched" / "PID error" lines, read by the CLI
//   METAL_CAP_SHIM_STATUS_PID      the pid of the process that handed the fd down: the CLI, then each injected process
//   METAL_CAP_SHIM_STATUS_ID       below the CLI's child: the fd's identity (device:inode) as the parent had it
//   METAL_CAP_SHIM_TRACE_DIR       exec's private folder (0700) to write the trace into as JSON at exit (optional)
//   METAL_CAP_SHIM_EXEC_PID        exec's pid: the program it starts dies with it (Linux; see dieWithExec)
//
// The status fd is trusted only through a chain of injected processes. A process takes it when its parent is the
// process the environment names (the CLI passes its own pid) or it is that process after an exec in place, the fd is
// a pipe or a socket, and, below the CLI's child, it is the very object the parent held. It then hands the fd down
// under its own pid, so a program a launcher starts reports too. A program that does not load the injector (static,
// setuid) breaks the chain: its children see a parent that is not the one named, leave whatever their fd 3 is
// untouched, and unset the variables.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <objc/runtime.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#if defined(__APPLE__)
#include <dispatch/dispatch.h>
#endif
#include <atomic>
#include <csignal>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "../engine/patch.h"
#include "../engine/profile.h"

namespace mcs {
namespace {

// Only plain data is touched by the load-time constructor: it may run before this library's C++ globals are
// constructed, and a std::string set there would be reset by its own constructor afterwards.
int gStatusFd = -1;
#if defined(__APPLE__)
// exec's pid, and the pid of the process exec started, when this is it (watchExec); 0 otherwise.
long gExecPid = 0;
long gWatchedPid = 0;
#endif
bool gProfileOk = false;
bool gProfileActive = false;
// Room for every field, every family and a 128-character name as hex.
char gProfileText[1024];
char gTraceDir[4096];
// Immortal: the program may still obtain devices on other threads while exit() runs static destructors, and libc++'s
// std::mutex (macOS) has a real destructor.
[[clang::no_destroy]] std::mutex gPatchMutex;
// Never destroyed: the at-exit trace writer is registered before C++ destructors and so runs after them.
std::vector<std::string> *gPatchedClasses = nullptr;

// The variables this process hands down, in storage of its own: putenv() puts these buffers themselves into the
// environment, so a fork child can rewrite its pid in place (see forkedChild) without allocating.
char gEnvFd[64];
char gEnvPid[64];
char gEnvId[96];
constexpr const char *kFdVar = "METAL_CAP_SHIM_STATUS_FD";
constexpr const char *kPidVar = "METAL_CAP_SHIM_STATUS_PID";
constexpr const char *kIdVar = "METAL_CAP_SHIM_STATUS_ID";
constexpr const char *kExecPidVar = "METAL_CAP_SHIM_EXEC_PID";
constexpr int kPidDigits = 10;

// A status line is `PID WORD REST`: the pid of the process that writes it, at the time it writes (a fork child
// reports as itself). Control characters become spaces, so a message (a profile's error text) cannot start a line of
// its own.
void statusLine(const std::string &line) {
  if (gStatusFd < 0) return;
  std::string out = std::to_string(static_cast<int>(getpid())) + " ";
  for (char c : line) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  out += "\n";
#if defined(MSG_NOSIGNAL)
  // Node's "pipe" stdio is a socket pair: send() can say "no SIGPIPE" if the CLI is gone.
  if (send(gStatusFd, out.data(), out.size(), MSG_NOSIGNAL) >= 0 || errno != ENOTSOCK) return;
#endif
  // Elsewhere F_SETNOSIGPIPE (set when the fd was taken) keeps a dead reader from killing the program.
  ssize_t ignored = write(gStatusFd, out.data(), out.size());
  (void)ignored;
}

// A whole decimal number from 1 up to `max` (digits only), or -1.
long wholeNumber(const char *text, long max) {
  if (text == NULL || *text == '\0') return -1;
  long value = 0;
  for (const char *p = text; *p != '\0'; p++) {
    if (*p < '0' || *p > '9') return -1;
    value = value * 10 + (*p - '0');
    if (value > max) return -1;
  }
  return value > 0 ? value : -1;
}

void writeDigits(char *at, int width, long value) {
  for (int i = width - 1; i >= 0; i--) {
    at[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

std::string identityOf(const struct stat &st) {
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(st.st_ino));
}

void forgetStatusVariables() {
  unsetenv(kFdVar);
  unsetenv(kPidVar);
  unsetenv(kIdVar);
}

// After fork() the child is this image too, and whatever it execs has it as parent: hand the fd down under the
// child's pid. Only memory writes here, which are async-signal-safe (a fork child of a threaded program may do
// nothing else before exec).
void forkedChild() {
  if (gEnvPid[0] != '\0') writeDigits(gEnvPid + strlen(kPidVar) + 1, kPidDigits, static_cast<long>(getpid()));
}

// Takes the status fd when it is the one the chain handed down (see the top of this file); otherwise leaves the
// descriptor as it is and unsets the variables, so nothing below this process trusts it either.
int takeStatusFd() {
  long fd = wholeNumber(getenv(kFdVar), 65535);
  long parent = wholeNumber(getenv(kPidVar), 0x7fffffffL);
  const char *identity = getenv(kIdVar);
  struct stat st;
  // The parent named, or this very process after it exec'd another program in place (a launcher that picks the real
  // binary: the pid stays, the fd and its identity with it).
  bool named = parent > 0 && (static_cast<long>(getppid()) == parent || static_cast<long>(getpid()) == parent);
  bool ours = fd >= 3 && named && fstat(static_cast<int>(fd), &st) == 0 &&
              (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) && (identity == NULL || identityOf(st) == identity);
  if (!ours) {
    forgetStatusVariables();
    return -1;
  }
  // Moved above the low descriptors a program may close and reuse, and left open across exec for the programs this
  // one starts; the CLI's fd 3 is closed. An fd inherited from an injected parent is already up there.
  int taken = static_cast<int>(fd);
  if (fd < 100) {
    taken = fcntl(static_cast<int>(fd), F_DUPFD, 100);
    if (taken < 0) {
      forgetStatusVariables();
      return -1;
    }
    close(static_cast<int>(fd));
  }
#if defined(F_SETNOSIGPIPE)
  fcntl(taken, F_SETNOSIGPIPE, 1);
#endif
  snprintf(gEnvFd, sizeof(gEnvFd), "%s=%d", kFdVar, taken);
  snprintf(gEnvId, sizeof(gEnvId), "%s=%s", kIdVar, identityOf(st).c_str());
  snprintf(gEnvPid, sizeof(gEnvPid), "%s=%0*ld", kPidVar, kPidDigits, static_cast<long>(getpid()));
  putenv(gEnvFd);
  putenv(gEnvId);
  putenv(gEnvPid);
  pthread_atfork(NULL, NULL, forkedChild);
  return taken;
}

// The program exec started must not run on, orphaned, when exec is killed with SIGKILL. On Linux the process exec
// started (its parent is the pid METAL_CAP_SHIM_EXEC_PID names) asks for SIGKILL when its parent dies: the parent
// death signal outlives an exec in place, and is cleared for fork children and when a set-user-ID or set-group-ID
// program runs or the credentials change. SIGKILL, not SIGTERM: a supervisor that kills exec with SIGKILL has usually
// sent SIGTERM first (which exec passed on), so the program has had its chance to stop. If exec died between the
// check and the request, the parent is no longer exec: the program stops now. The variable is unset in every process
// that loads the injector, so the programs this one starts never compare their parent with a pid that is not it.
// macOS has no parent-death signal: watchExec arms a watch on exec's pid instead, later (see there).
void dieWithExec() {
  long execPid = wholeNumber(getenv(kExecPidVar), 0x7fffffffL);
  unsetenv(kExecPidVar);
#if defined(__linux__)
  if (execPid <= 0 || static_cast<long>(getppid()) != execPid) return;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return;
  if (static_cast<long>(getppid()) != execPid) raise(SIGKILL);
#elif defined(__APPLE__)
  if (execPid <= 0 || static_cast<long>(getppid()) != execPid) return;
  gExecPid = execPid;
  gWatchedPid = static_cast<long>(getpid());
#else
  (void)execPid;
#endif
}

// macOS: the program exec started stops when exec exits, through one libdispatch source on exec's pid
// (DISPATCH_PROC_EXIT; no thread of its own until the event). Armed at the program's first Metal device call, not at
// load: libdispatch makes the children of a later fork unable to use it, which a program that forks before it uses
// Metal (a pre-forking server) must not pay; once Metal runs, libdispatch is running anyway. Only in the process exec
// started (a fork child has another pid, and the variable is gone in the programs it starts), and lost with an exec
// in place. When exec died before the watch was armed, the program stops then.
void watchExec() {
#if defined(__APPLE__)
  static std::atomic<bool> armed{false};
  if (gExecPid <= 0 || static_cast<long>(getpid()) != gWatchedPid || armed.exchange(true)) return;
  const pid_t exec = static_cast<pid_t>(gExecPid);
  dispatch_source_t watch = dispatch_source_create(DISPATCH_SOURCE_TYPE_PROC, static_cast<uintptr_t>(exec),
                                                   DISPATCH_PROC_EXIT, dispatch_get_global_queue(QOS_CLASS_UTILITY, 0));
  if (watch == NULL) return;
  dispatch_source_set_event_handler(watch, ^{
    kill(getpid(), SIGKILL);
  });
  dispatch_resume(watch);
  // An exit before the source was armed is never delivered to it.
  if (getppid() != exec) kill(getpid(), SIGKILL);
#endif
}

// Which slice of this library the loader picked. dyld matches the process: an arm64 process (third-party programs,
// Node) loads the arm64 slice; an arm64e process (Apple's own binaries) finds none it can load, so exec refuses a
// program built for arm64e only.
const char *loadedSlice() {
#if defined(__aarch64__) || defined(__arm64__)
  return "arm64";
#elif defined(__x86_64__)
  return "x86_64";
#else
  return "unknown";
#endif
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// exec's trace folder, opened only when it is what exec made: a folder (not a link to one) of this user that nobody
// else can enter. Anything else (a variable inherited by a program exec did not start) gets no trace.
int openTraceDir() {
  int dir = open(gTraceDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return -1;
  struct stat st;
  if (fstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    close(dir);
    return -1;
  }
  return dir;
}

// Gives the finished trace its name, exclusively: link(2) fails rather than replace. The first process to finish
// takes `first.json`; any other (a program started by the first, say) `<pid>.json`, or `<pid>-<n>.json` should its
// pid have been used before in the same run.
void nameTrace(int dir, const char *temp) {
  char name[64];
  if (linkat(dir, temp, dir, "first.json", 0) == 0) return;
  for (int n = 0; n < 16; n++) {
    if (n == 0) {
      snprintf(name, sizeof(name), "%d.json", static_cast<int>(getpid()));
    } else {
      snprintf(name, sizeof(name), "%d-%d.json", static_cast<int>(getpid()), n);
    }
    if (linkat(dir, temp, dir, name, 0) == 0 || errno != EEXIST) return;
  }
}

void writeTraceFile() {
  if (gTraceDir[0] == '\0') return;
  // Another thread may be patching at exit: the list is copied under the lock that guards it.
  std::vector<std::string> classes;
  {
    std::lock_guard<std::mutex> lock(gPatchMutex);
    if (gPatchedClasses != nullptr) classes = *gPatchedClasses;
  }
  if (classes.empty()) return;
  int dir = openTraceDir();
  if (dir < 0) return;
  char temp[64];
  snprintf(temp, sizeof(temp), ".%d.tmp", static_cast<int>(getpid()));
  // O_EXCL | O_NOFOLLOW: never an existing file, a link or a FIFO, even inside the private folder.
  int fd = openat(dir, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (f == NULL) {
    if (fd >= 0) close(fd);
    close(dir);
    return;
  }
  fprintf(f, "{\"pid\":%d,\"slice\":\"%s\",\"profileApplied\":%s,\"patchedClasses\":[", static_cast<int>(getpid()),
          loadedSlice(), gProfileOk ? "true" : "false");
  for (size_t i = 0; i < classes.size(); i++) fprintf(f, "%s%s", i == 0 ? "" : ",", jsonString(classes[i]).c_str());
  fprintf(f, "],\"trace\":[");
  bool first = true;
  for (const TraceRow &row : traceRows()) {
    if (row.calls == 0) continue;
    fprintf(f, "%s{\"selector\":%s,\"family\":", first ? "" : ",", jsonString(selectorName(row.selector)).c_str());
    if (row.selector == HookedSelector::SupportsFamily) {
      fprintf(f, "%ld", row.family);
    } else {
      fprintf(f, "null");
    }
    if (row.selector == HookedSelector::Name) {
      fprintf(f, ",\"calls\":%llu,\"stock\":%s,\"given\":%s}", static_cast<unsigned long long>(row.calls),
              jsonString(row.stockName).c_str(), jsonString(row.givenName).c_str());
    } else {
      fprintf(f, ",\"calls\":%llu,\"stock\":%llu,\"given\":%llu}", static_cast<unsigned long long>(row.calls),
              static_cast<unsigned long long>(row.lastStock), static_cast<unsigned long long>(row.lastGiven));
    }
    first = false;
  }
  fprintf(f, "]}\n");
  if (fclose(f) == 0) nameTrace(dir, temp);
  unlinkat(dir, temp, 0);
  close(dir);
}

void patchDeviceClassesLocked(const std::vector<id> &devices) {
  std::lock_guard<std::mutex> lock(gPatchMutex);
  if (gPatchedClasses == nullptr) gPatchedClasses = new std::vector<std::string>();
  if (!gProfileActive) {
    Profile profile;
    std::string error;
    parseNativeProfile(gProfileText, &profile, &error);
    if (gTraceDir[0] != '\0') profile.trace = true;
    setActiveProfile(&profile);
    gProfileActive = true;
  }
  std::vector<Class> classes;
  std::vector<void *> objects;
  for (id device : devices) {
    objects.push_back((void *)device);
    Class cls = object_getClass(device);
    bool seen = false;
    for (Class c : classes) seen = seen || c == cls;
    if (!seen) classes.push_back(cls);
  }
  PatchResult result = patchClasses(classes, classesNamingOtherwise(objects, *activeProfile()));
  if (!result.ok) {
    statusLine("error " + result.errorCode + " " + result.message);
    return;
  }
  for (const ClassPatch &patch : result.classes) {
    bool known = false;
    for (const std::string &name : *gPatchedClasses) known = known || name == patch.className;
    if (!known) {
      gPatchedClasses->push_back(patch.className);
      statusLine("patched " + patch.className);
    }
  }
}

__attribute__((constructor)) void injectorLoaded() {
  // Read before anything is put in the environment: bash defines its own getenv and putenv, and its putenv before
  // bash's main makes bash's getenv read its (then almost empty) variable table instead of environ, so a variable read
  // after it is missing although the program has it.
  const char *trace = getenv("METAL_CAP_SHIM_TRACE_DIR");
  if (trace != NULL && strlen(trace) < sizeof(gTraceDir)) strcpy(gTraceDir, trace);
  const char *found = getenv("METAL_CAP_SHIM_PROFILE_NATIVE");
  bool fits = found != NULL && strlen(found) < sizeof(gProfileText);
  if (fits) strcpy(gProfileText, found);
  dieWithExec();
  gStatusFd = takeStatusFd();
  Profile profile;
  std::string error;
  gProfileOk = fits && parseNativeProfile(gProfileText, &profile, &error);
  if (!gProfileOk) {
    // Fail closed: no hooks without a valid profile; the CLI reports it from the status line.
    statusLine("error ERR_INVALID_PROFILE " + (error.empty() ? std::string("missing or too long") : error));
    gProfileText[0] = '\0';
    return;
  }
  statusLine(std::string("loaded ") + loadedSlice());
  atexit(writeTraceFile);
}

void patchDeviceClasses(const std::vector<id> &devices) {
  watchExec();
  if (!gProfileOk || devices.empty()) return;
  // Called from the interposed device creators, which a program may call outside any pool: what Apple's getters
  // autorelease here (the device's name) is drained here.
  @autoreleasepool {
    patchDeviceClassesLocked(devices);
  }
}

}  // namespace
}  // namespace mcs

#if defined(__APPLE__)

// dyld's interposing: each pair makes every other image's calls to `replacee` go to `replacement`; calls from this
// image still reach Metal's own functions.
// Laid out as dyld-interposing.h does: a writable pair in __DATA,__interpose.
#define MCS_INTERPOSE(replacement, replacee)                                    \
  __attribute__((used)) static struct {                                         \
    const void *r;                                                              \
    const void *e;                                                              \
  } mcs_interpose_##replacee __attribute__((section("__DATA,__interpose"))) = { \
      reinterpret_cast<const void *>(&replacement), reinterpret_cast<const void *>(&replacee)}

static id<MTLDevice> mcs_MTLCreateSystemDefaultDevice(void) {
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  if (device != nil) mcs::patchDeviceClasses({(id)device});
  return device;
}

static NSArray<id<MTLDevice>> *mcs_MTLCopyAllDevices(void) {
  NSArray<id<MTLDevice>> *devices = MTLCopyAllDevices();
  std::vector<id> list;
  for (NSUInteger i = 0; i < [devices count]; i++) list.push_back([devices objectAtIndex:i]);
  mcs::patchDeviceClasses(list);
  return devices;
}

// The observer variant (macOS 10.13+) lists devices too, and can be a program's only way in.
static NSArray<id<MTLDevice>> *mcs_MTLCopyAllDevicesWithObserver(id<NSObject> *observer,
                                                                 MTLDeviceNotificationHandler handler) {
  NSArray<id<MTLDevice>> *devices = MTLCopyAllDevicesWithObserver(observer, handler);
  std::vector<id> list;
  for (NSUInteger i = 0; i < [devices count]; i++) list.push_back([devices objectAtIndex:i]);
  mcs::patchDeviceClasses(list);
  return devices;
}

MCS_INTERPOSE(mcs_MTLCreateSystemDefaultDevice, MTLCreateSystemDefaultDevice);
MCS_INTERPOSE(mcs_MTLCopyAllDevices, MTLCopyAllDevices);
MCS_INTERPOSE(mcs_MTLCopyAllDevicesWithObserver, MTLCopyAllDevicesWithObserver);

#else

// LD_PRELOAD: these definitions come first in symbol lookup; the real ones are the next definitions in line.
template <typename Fn>
static Fn nextDefinition(const char *name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

extern "C" __attribute__((visibility("default"))) id<MTLDevice> MTLCreateSystemDefaultDevice(void) {
  using Fn = id<MTLDevice> (*)(void);
  static Fn real = nextDefinition<Fn>("MTLCreateSystemDefaultDevice");
  id<MTLDevice> device = real != NULL ? real() : nil;
  if (device != nil) mcs::patchDeviceClasses({(id)device});
  return device;
}

extern "C" __attribute__((visibility("default"))) NSArray<id<MTLDevice>> *MTLCopyAllDevices(void) {
  using Fn = NSArray<id<MTLDevice>> *(*)(void);
  static Fn real = nextDefinition<Fn>("MTLCopyAllDevices");
  NSArray<id<MTLDevice>> *devices = real != NULL ? real() : [[NSArray alloc] init];
  std::vector<id> list;
  for (NSUInteger i = 0; i < [devices count]; i++) list.push_back([devices objectAtIndex:i]);
  mcs::patchDeviceClasses(list);
  return devices;
}

#endif
