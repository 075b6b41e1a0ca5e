#include "consumers.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "../platform/host.h"

namespace mcs {
namespace {

// ggml's dynamic backend loader (GGML_BACKEND_DL, node-llama-cpp's prebuilt binaries) loads libggml-metal.* with
// RTLD_LOCAL, so its symbols are invisible to dlsym(RTLD_DEFAULT): only the image list shows it.
const char *const kConsumerImagePrefixes[] = {"libggml-metal", "libmlx"};

// Symbols of a ggml-metal or MLX linked into another image (a static build has no image named after it), one list
// per engine. dlsym takes the C name, without the leading underscore Mach-O adds.
const char *const kGgmlMetalSymbols[] = {"ggml_backend_metal_reg", "ggml_backend_metal_init"};
const char *const kMlxSymbols[] = {
    "mlx_metal_is_available",              // mlx-c
    "_ZN3mlx4core5metal12is_availableEv",  // C++ MLX: mlx::core::metal::is_available()
};

// The operating system's own libraries carry neither engine, and on macOS they are hundreds of images, each of
// whose lookups would also search its dependents.
const char *const kSystemImagePrefixes[] = {"/System/", "/usr/lib/"};

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool hasPrefix(const std::string &s, const char *prefix) {
  return s.compare(0, strlen(prefix), prefix) == 0;
}

template <size_t N>
bool hasAnyPrefix(const std::string &s, const char *const (&prefixes)[N]) {
  for (const char *prefix : prefixes) {
    if (hasPrefix(s, prefix)) return true;
  }
  return false;
}

bool isConsumerImage(const std::string &path) {
  return hasAnyPrefix(baseName(path), kConsumerImagePrefixes);
}

// Adds "symbol (in image)" for the first of `symbols` that `handle` resolves, unless its image is already named by
// file name or the same entry is already there. dlsym through a library's handle also searches its dependencies,
// so the entry names the image dladdr says defines the symbol, not the one searched.
template <size_t N>
void addEngine(void *handle, const char *const (&symbols)[N], std::vector<std::string> &found) {
  for (const char *symbol : symbols) {
    void *address = dlsym(handle, symbol);
    if (address == nullptr) continue;
    Dl_info info;
    std::string image = dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
    if (!image.empty() && isConsumerImage(image)) return;
    std::string entry = std::string(symbol) + (image.empty() ? "" : " (in " + baseName(image) + ")");
    if (std::find(found.begin(), found.end(), entry) == found.end()) found.push_back(entry);
    return;
  }
}

void addEngines(void *handle, std::vector<std::string> &found) {
  addEngine(handle, kGgmlMetalSymbols, found);
  addEngine(handle, kMlxSymbols, found);
}

// The image that defines `symbol` as `handle` resolves it (a library's handle also searches its dependencies).
std::string definingImage(void *handle, const char *symbol) {
  void *address = dlsym(handle, symbol);
  if (address == nullptr) return "";
  Dl_info info;
  return dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
}

// The last walk's answer and the image list it walked. Each walk opens every loaded image and searches it with its
// dependencies, and applyProfile() and status() walk each time they run, while a process's image list rarely
// changes; the same list gives the same answer, so it is reused. Immortal, like the engine's own state (exit-time
// destructors would race a query on another thread).
// A scan is out of date when the image list changed, or when an image was loaded since (`loads`): a library unloaded
// and loaded again at the same path leaves the same list.
struct ConsumerScan {
  bool valid = false;
  std::vector<std::string> images;
  uint64_t loads = 0;
  std::vector<std::string> consumers;
};
struct GgmlMetalScan {
  bool valid = false;
  std::vector<std::string> images;
  uint64_t loads = 0;
  std::vector<std::string> markers;
  std::vector<LoadedGgmlMetal> found;
};
[[clang::no_destroy]] std::mutex gScanMutex;
[[clang::no_destroy]] ConsumerScan gConsumerScan;
[[clang::no_destroy]] GgmlMetalScan gGgmlMetalScan;

std::vector<std::string> scanConsumers(const std::vector<std::string> &images) {
  std::vector<std::string> found = consumerImages(images);
  // The global scope: the main program and every image loaded RTLD_GLOBAL.
  addEngines(RTLD_DEFAULT, found);
  // Each image on its own, for one loaded RTLD_LOCAL with an engine linked in. RTLD_NOLOAD only hands out a handle
  // to an image that is still loaded (nothing is loaded or promoted to global); the dlclose() gives it back.
  for (const std::string &path : images) {
    if (hasAnyPrefix(path, kSystemImagePrefixes)) continue;
    void *handle = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;  // unloaded since the walk, or no file to open (Linux's vDSO)
    addEngines(handle, found);
    dlclose(handle);
  }
  return found;
}

std::vector<LoadedGgmlMetal> scanGgmlMetal(const std::vector<std::string> &images,
                                           const std::vector<std::string> &markers) {
  std::vector<LoadedGgmlMetal> found;
  for (const std::string &path : images) {
    if (hasAnyPrefix(path, kSystemImagePrefixes)) continue;
    void *handle = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    bool named = hasPrefix(baseName(path), kConsumerImagePrefixes[0]);
    // An engine linked into an image named otherwise: that image itself must define a ggml-metal symbol.
    bool defines = false;
    for (const char *symbol : kGgmlMetalSymbols) defines = defines || definingImage(handle, symbol) == path;
    if (named || defines) {
      LoadedGgmlMetal entry;
      entry.image = path;
      using VersionFn = const char *(*)();
      if (auto version = reinterpret_cast<VersionFn>(dlsym(handle, "ggml_version"))) {
        const char *text = version();
        entry.hasVersion = text != nullptr;
        if (text != nullptr) entry.version.assign(text, strnlen(text, 64));
      }
      for (const std::string &marker : markers) {
        if (dlsym(handle, marker.c_str()) != nullptr) entry.markers.push_back(marker);
      }
      found.push_back(entry);
    }
    dlclose(handle);
  }
  return found;
}

}  // namespace

std::vector<std::string> consumerImages(const std::vector<std::string> &paths) {
  std::vector<std::string> found;
  for (const std::string &path : paths) {
    if (isConsumerImage(path)) found.push_back(baseName(path) + " (" + path + ")");
  }
  return found;
}

std::vector<std::string> loadedConsumers() {
  uint64_t loads = imageLoads();
  std::vector<std::string> images = loadedImagePaths();
  std::lock_guard<std::mutex> lock(gScanMutex);
  if (!gConsumerScan.valid || gConsumerScan.images != images || gConsumerScan.loads != loads) {
    gConsumerScan.consumers = scanConsumers(images);
    gConsumerScan.images = images;
    gConsumerScan.loads = loads;
    gConsumerScan.valid = true;
  }
  return gConsumerScan.consumers;
}

std::vector<LoadedGgmlMetal> loadedGgmlMetal(const std::vector<std::string> &markers) {
  uint64_t loads = imageLoads();
  std::vector<std::string> images = loadedImagePaths();
  std::lock_guard<std::mutex> lock(gScanMutex);
  if (!gGgmlMetalScan.valid || gGgmlMetalScan.images != images || gGgmlMetalScan.loads != loads ||
      gGgmlMetalScan.markers != markers) {
    gGgmlMetalScan.found = scanGgmlMetal(images, markers);
    gGgmlMetalScan.images = images;
    gGgmlMetalScan.loads = loads;
    gGgmlMetalScan.markers = markers;
    gGgmlMetalScan.valid = true;
  }
  return gGgmlMetalScan.found;
}

}  // namespace mcs
