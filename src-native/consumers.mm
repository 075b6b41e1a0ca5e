#include "consumers.h"

#include <dlfcn.h>

#include <cstring>

#include "host.h"

namespace mcs {
namespace {

// ggml's dynamic backend loader (GGML_BACKEND_DL, node-llama-cpp's prebuilt binaries) loads libggml-metal.* with
// RTLD_LOCAL, so its symbols are invisible to dlsym(RTLD_DEFAULT): only the image list shows it.
const char *const kConsumerImagePrefixes[] = {"libggml-metal", "libmlx"};

// Symbols of a ggml-metal or MLX linked into another image (a static build has no image named after it).
const char *const kConsumerSymbols[] = {
    "ggml_backend_metal_reg",
    "ggml_backend_metal_init",
    "mlx_metal_is_available",
};

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool isConsumerImage(const std::string &path) {
  std::string name = baseName(path);
  for (const char *prefix : kConsumerImagePrefixes) {
    if (name.compare(0, strlen(prefix), prefix) == 0) return true;
  }
  return false;
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
  std::vector<std::string> found = consumerImages(loadedImagePaths());
  for (const char *symbol : kConsumerSymbols) {
    void *address = dlsym(RTLD_DEFAULT, symbol);
    if (address == nullptr) continue;
    Dl_info info;
    std::string image = dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
    // Already named by its image: a libggml-metal loaded RTLD_GLOBAL shows up both ways.
    if (!image.empty() && isConsumerImage(image)) continue;
    found.push_back(std::string(symbol) + (image.empty() ? "" : " (in " + baseName(image) + ")"));
  }
  return found;
}

}  // namespace mcs
