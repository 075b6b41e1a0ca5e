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
std::vector<std::string> loadedConsumers();

}  // namespace mcs
