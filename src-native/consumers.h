// Which Metal consumers (ggml-metal, MLX) are already loaded into this process. Engines read device answers once at
// init, so a consumer loaded before the patch may have cached stock answers.
#pragma once

#include <string>
#include <vector>

namespace mcs {

// The images among `paths` whose file name marks a Metal consumer (libggml-metal*, libmlx*), as "name (path)".
// Portable: the image list comes from loadedImagePaths() (dyld on macOS, the ELF loader on Linux).
std::vector<std::string> consumerImages(const std::vector<std::string> &paths);

// consumerImages(loadedImagePaths()) plus the consumer symbols a global lookup finds: a statically linked ggml-metal
// has no image of its own.
std::vector<std::string> loadedConsumers();

}  // namespace mcs
