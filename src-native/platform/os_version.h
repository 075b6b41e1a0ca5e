// The macOS version, from the two places a process can read it. sysctl's kern.osproductversion (macOS 10.13.4 and
// later) always gives the real one. NSProcessInfo's operatingSystemVersion gives a compatibility number to a program
// linked against an older SDK: macOS 26 reports itself as 16.x to programs built before Xcode 26 (.NET runtime PR
// 116536), which most Node binaries in use are. So the sysctl answer wins, and 16 is read as 26 only when sysctl
// gave nothing. Pure and portable: host_darwin.mm calls it, and the Linux tests compile it on its own.
#pragma once

#include <string>

namespace mcs {

// The compatibility major version macOS 26 reports to programs linked against an SDK older than its own.
inline constexpr long kCompatMajorOfMacos26 = 16;

inline std::string macosVersion(const std::string &productVersion, long major, long minor, long patch) {
  if (!productVersion.empty() && productVersion[0] >= '0' && productVersion[0] <= '9') return productVersion;
  long real = major == kCompatMajorOfMacos26 ? 26 : major;
  std::string out = std::to_string(real) + "." + std::to_string(minor);
  if (patch != 0) out += "." + std::to_string(patch);
  return out;
}

}  // namespace mcs
