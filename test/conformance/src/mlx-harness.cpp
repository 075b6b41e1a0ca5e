// Runs MLX's own architecture parsing (Device::Device), command-buffer limits, NAX check and quantized batch limits,
// taken from MLX's sources at a pinned commit by mlx-build.mjs (the parts arrive as mlx-extracted.inc), over one
// architecture name. It contains no MLX code itself: only the stand-ins those parts call (the MTLDevice chain that
// yields architecture.name, metal::device(), __builtin_available) and a main that prints what MLX computed as JSON.
//
//   mlx-harness NAME MACOS_OK      NAME is architecture.name; MACOS_OK 1 or 0 answers __builtin_available(macOS 26.2)
//
// MLX's own switches (MLX_METAL_GPU_ARCH, MLX_MAX_OPS_PER_BUFFER, MLX_MAX_MB_PER_BUFFER) are read from the
// environment by MLX's own env::get_var, once per process as MLX does: one process per case.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static bool harness_macos_ok = false;
// MLX asks the OS version with clang's availability builtin, which answers only on Apple platforms.
#define __builtin_available(...) (harness_macos_ok)

namespace harness {
struct Name {
  const char *text;
  const char *utf8String() const { return text; }
};
struct Architecture {
  Name n;
  const Name *name() const { return &n; }
};
struct MTLDevice {
  Architecture a;
  const Architecture *architecture() const { return &a; }
};
}  // namespace harness

namespace mlx::core {

struct Device {
  enum DeviceType { cpu, gpu };
};

namespace env {
#include "mlx-env.inc"
}  // namespace env

namespace metal {

// The members Device::Device writes and the getters the kernels read, as MLX's metal::Device names them.
struct Device {
  harness::MTLDevice *device_;
  std::string arch_;
  int arch_gen_ = 0;
  int max_ops_per_buffer_ = 0;
  int max_mb_per_buffer_ = 0;
  const std::string &get_architecture() const { return arch_; }
  int get_architecture_gen() const { return arch_gen_; }
  void init() {
#include "mlx-device-init.inc"
  }
};

static Device *the_device = nullptr;
Device &device(mlx::core::Device::DeviceType) {
  return *the_device;
}

#include "mlx-nax.inc"

}  // namespace metal

#include "mlx-qmv.inc"

}  // namespace mlx::core

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: mlx-harness NAME MACOS_OK\n");
    return 2;
  }
  harness_macos_ok = strcmp(argv[2], "1") == 0;
  harness::MTLDevice mtl{{{argv[1]}}};
  mlx::core::metal::Device d;
  d.device_ = &mtl;
  mlx::core::metal::the_device = &d;
  d.init();
  const bool nax = mlx::core::metal::is_nax_available();
  int q[3] = {-1, -1, -1};
#ifdef HARNESS_HAS_QMV
  q[0] = mlx::core::get_qmv_batch_limit(2048, 2048, d);
  q[1] = mlx::core::get_qmv_batch_limit(4096, 4096, d);
  q[2] = mlx::core::get_qmv_batch_limit(8192, 8192, d);
#endif
  const char last = d.arch_.back();
  printf("{\"name\":\"%s\",\"generation\":%d,\"class\":%d,\"maxOps\":%d,\"maxMb\":%d,\"nax\":%s,\"qmv\":[%d,%d,%d]}\n",
         d.arch_.c_str(), d.arch_gen_, static_cast<int>(last), d.max_ops_per_buffer_, d.max_mb_per_buffer_,
         nax ? "true" : "false", q[0], q[1], q[2]);
  return 0;
}
