// macOS only: host facts from sysctl and NSProcessInfo, and the image list from dyld.
#include "host.h"

#import <Foundation/Foundation.h>
#include <mach-o/dyld.h>
#include <sys/sysctl.h>
#include <sys/utsname.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "os_version.h"

namespace mcs {
namespace {

Optional sysctlString(const char *name) {
  Optional out;
  size_t length = 0;
  if (sysctlbyname(name, NULL, &length, NULL, 0) != 0 || length == 0) return out;
  std::string buffer(length, '\0');
  if (sysctlbyname(name, &buffer[0], &length, NULL, 0) != 0) return out;
  out.known = true;
  out.value = std::string(buffer.c_str());
  return out;
}

// kern.hv_vmm_present is 1 inside a Virtualization.framework (or other hypervisor) guest; missing on old kernels.
int sysctlFlag(const char *name) {
  int value = 0;
  size_t length = sizeof(value);
  if (sysctlbyname(name, &value, &length, NULL, 0) != 0) return -1;
  return value != 0 ? 1 : 0;
}

// kern.osproductversion first: NSProcessInfo says 16.x on macOS 26 to a program linked against an older SDK.
Optional productVersion() {
  Optional fromSysctl = sysctlString("kern.osproductversion");
  NSOperatingSystemVersion v = [[NSProcessInfo processInfo] operatingSystemVersion];
  Optional out;
  out.known = true;
  out.value = macosVersion(fromSysctl.known ? fromSysctl.value : std::string(), static_cast<long>(v.majorVersion),
                           static_cast<long>(v.minorVersion), static_cast<long>(v.patchVersion));
  return out;
}

// The machine's architecture, not this process's: under Rosetta uname() says x86_64 on an Apple-silicon Mac, while
// hw.optional.arm64 still reports the hardware.
Optional machineArch() {
  Optional out;
  if (sysctlFlag("hw.optional.arm64") == 1) {
    out.known = true;
    out.value = "arm64";
    return out;
  }
  struct utsname name;
  if (uname(&name) != 0) return out;
  out.known = true;
  out.value = name.machine;
  return out;
}

// Whether this process runs under Rosetta. Apple documents the sysctl as missing (ENOENT) where there is no
// translation at all, which is a native process too.
int translatedProcess() {
  int value = 0;
  size_t length = sizeof(value);
  if (sysctlbyname("sysctl.proc_translated", &value, &length, NULL, 0) == 0) return value == 1 ? 1 : 0;
  return errno == ENOENT ? 0 : -1;
}

}  // namespace

HostFacts readHostFacts() {
  HostFacts facts;
  facts.platform = "darwin";
  facts.osVersion = productVersion();
  facts.osBuild = sysctlString("kern.osversion");
  facts.model = sysctlString("hw.model");
  facts.isVirtualMachine = sysctlFlag("kern.hv_vmm_present");
  facts.arch = machineArch();
  uint64_t memory = 0;
  size_t length = sizeof(memory);
  if (sysctlbyname("hw.memsize", &memory, &length, NULL, 0) == 0 && length == sizeof(memory)) {
    facts.memoryKnown = true;
    facts.memoryBytes = memory;
  }
  facts.translated = translatedProcess();
  // The chip's name ("Apple M1 Ultra"); a Virtualization.framework guest reports its host's, with " (Virtual)".
  facts.cpuBrand = sysctlString("machdep.cpu.brand_string");
  return facts;
}

uint64_t deviceSetGeneration() {
  return 0;
}

namespace {
std::atomic<uint64_t> gImageLoads{0};
void countImageLoad(const struct mach_header *, intptr_t) {
  gImageLoads.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

uint64_t imageLoads() {
  // dyld calls the function for every image loaded now, then for each one loaded later; it cannot be unregistered,
  // and the addon is never unloaded.
  static std::once_flag registered;
  std::call_once(registered, [] { _dyld_register_func_for_add_image(countImageLoad); });
  return gImageLoads.load(std::memory_order_relaxed);
}

std::vector<std::string> loadedImagePaths() {
  std::vector<std::string> paths;
  // dyld.h: another thread may load or unload an image during the walk; an index that is no longer valid gives NULL,
  // which is skipped. The list only feeds a warning, so a momentarily stale view is acceptable.
  uint32_t count = _dyld_image_count();
  for (uint32_t i = 0; i < count; i++) {
    const char *name = _dyld_get_image_name(i);
    if (name != NULL) paths.push_back(name);
  }
  return paths;
}

}  // namespace mcs
