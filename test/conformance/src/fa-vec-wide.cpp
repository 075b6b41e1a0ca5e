/* llama.cpp's own flash-attention vector configuration choice (ggml-metal-tuning.cpp's fa_vec_pick, compiled into
   this file), asked for the two head shapes whose Q=4 configuration can need more than 32768 bytes of threadgroup
   memory (dk 512 and 576). Prints one line per choice of Q=4 with four SIMD groups' worth of KV (ne11 4097 and 16384):
   "<device_id> <gpu_family> <dtype> <dk> <dv> <ne11> <ne01>". MCS_TUNING_BY_CHIP selects v0.4's signature. */
#include "ggml-metal-tuning.cpp"

#include <cstdio>
#include <set>

int main() {
  std::set<int> dtypes;
  for (const auto &entry : ggml_metal_tuning::fa_vec_tuned_table) dtypes.insert(entry.key.dtype);
  const int heads[][2] = {{512, 512}, {576, 512}};
  const long kv[] = {4097, 16384};
#ifdef MCS_TUNING_BY_CHIP
  const int last_device = GGML_METAL_DEVICE_A18_PRO;
#else
  const int last_device = 0;
#endif
  for (int device = 0; device <= last_device; ++device) {
    for (int family = 0; family <= 12; ++family) {
      for (int dtype : dtypes) {
        for (const auto &head : heads) {
          for (long ne11 : kv) {
            for (long ne01 = 1; ne01 <= 19; ++ne01) {
#ifdef MCS_TUNING_BY_CHIP
              const auto cfg = ggml_metal_tuning::fa_vec_pick((enum ggml_metal_device_id)device, family, dtype, head[0],
                                                              head[1], ne11, ne01);
#else
              const auto cfg = ggml_metal_tuning::fa_vec_pick(family, dtype, head[0], head[1], ne11, ne01);
#endif
              if (cfg.Q == 4)
                std::printf("%d %d %d %d %d %ld %ld\n", device, family, dtype, head[0], head[1], ne11, ne01);
            }
          }
        }
      }
    }
  }
  return 0;
}
