/* The flash-attention tuning tier of llama.cpp v0.4.x (ggml-metal-tuning.cpp, compiled into this file to reach its
   table and its family representative): fa_vec_pick tries the chip's rows, then the rows of its family's
   representative chip, then the baseline. Prints which of those has rows for this device. */
#include "driver.h"

#include "ggml-metal-tuning.cpp"

#include <cstring>

static bool has_rows(int device_id) {
  for (const auto &entry : ggml_metal_tuning::fa_vec_tuned_table) {
    if (entry.key.device_id == device_id) return true;
  }
  return false;
}

extern "C" const char *ggml_metal_device_id_token(enum ggml_metal_device_id id);

extern "C" void mcs_tuning_tier(struct mcs_out *out, int device_id, int gpu_family) {
  const char *tier = "baseline";
  int chip = GGML_METAL_DEVICE_GENERIC;
  if (device_id != GGML_METAL_DEVICE_GENERIC && has_rows(device_id)) {
    tier = "exact";
    chip = device_id;
  } else if (gpu_family > 0) {
    const int rep = ggml_metal_tuning::fa_vec_family_representative(gpu_family);
    if (rep != GGML_METAL_DEVICE_GENERIC && has_rows(rep)) {
      tier = "family";
      chip = rep;
    }
  }
  mcs_out_printf(out, "{\"tier\":\"%s\",\"chip\":", tier);
  if (chip == GGML_METAL_DEVICE_GENERIC) {
    mcs_out_printf(out, "null");
  } else {
    mcs_out_json_string(out, ggml_metal_device_id_token((enum ggml_metal_device_id)chip));
  }
  if (strcmp(tier, "family") == 0) {
    mcs_out_printf(out, ",\"family\":%d}", gpu_family);
  } else {
    mcs_out_printf(out, ",\"family\":null}");
  }
}
