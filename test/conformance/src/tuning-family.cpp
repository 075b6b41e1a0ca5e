/* The flash-attention tuning tier of llama.cpp v0.5.0 and later (ggml-metal-tuning.cpp, compiled into this file to
   reach its table): fa_vec_pick looks rows up by Apple GPU family alone, then falls back to the baseline. Prints
   whether the device's family has rows. */
#include "driver.h"

#include "ggml-metal-tuning.cpp"

extern "C" void mcs_tuning_tier(struct mcs_out *out, int device_id, int gpu_family) {
  (void)device_id;
  bool rows = false;
  for (const auto &entry : ggml_metal_tuning::fa_vec_tuned_table) {
    if (entry.key.family == gpu_family) rows = true;
  }
  if (rows && gpu_family > 0) {
    mcs_out_printf(out, "{\"tier\":\"family\",\"chip\":null,\"family\":%d}", gpu_family);
  } else {
    mcs_out_printf(out, "{\"tier\":\"baseline\",\"chip\":null,\"family\":null}");
  }
}
