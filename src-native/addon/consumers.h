// Which Metal consumers (ggml-metal, MLX) are already loaded into this process. Engines read device answers once at
// init, so a consumer loaded before the patch may have cached stock answers.
#pragma once

#include <string>
#include <vector>

namespace mcs {

// The images among `paths` whose file name marks a Metal consumer (libggml-metal*, libmlx*), as "name (path)".
// Portable: the image list comes from loadedImagePaths() (dyld on macOS, the ELF loader on Linux).
std::vector<std::string> consumerImages(const std::vector<std::string> &paths);

// consumerImages(loadedImagePaths()) plus, as "symbol (in image)", a ggml-metal or MLX symbol defined in an image not
// named after its engine (a static build has no image of its own), found through the global scope and through each
// loaded image's own handle (an image loaded RTLD_LOCAL is outside the global scope); the OS's libraries are skipped.
// While the list of loaded images is the same as at the last call and nothing was loaded since (imageLoads), the last
// answer is returned without a new walk.
std::vector<std::string> loadedConsumers();

// One loaded ggml-metal: the image that holds it, ggml_version() of its ggml, and which of the `markers` symbols it
// (or a library it depends on) exports.
struct LoadedGgmlMetal {
  std::string image;
  bool hasVersion = false;
  std::string version;
  std::vector<std::string> markers;
};

// Every loaded image named like ggml-metal (libggml-metal*) or defining a ggml-metal symbol, outside the OS's own
// libraries, with what it exports of `markers`. Calls the image's ggml_version(), which returns a constant string.
// Like loadedConsumers(), answers again from the last walk while the image list and `markers` are the same.
std::vector<LoadedGgmlMetal> loadedGgmlMetal(const std::vector<std::string> &markers);

}  // namespace mcs
