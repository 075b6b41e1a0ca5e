/* Props reader for the ggml-metal-device.m era (llama.cpp v0.4.0 and later): ggml_metal_device_init, as the Metal
   backend calls it when it registers, then every field of ggml_metal_device_props that a rule predicts. The source
   is compiled into this file to reach its static chip table and name parser. */
#include "driver.h"

#include "ggml-metal-device.m"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* tuning-chip.cpp / tuning-family.cpp: which table tier ggml-metal-tuning.cpp's fa_vec_pick consults first. */
void mcs_tuning_tier(struct mcs_out *out, int device_id, int gpu_family);

void mcs_era_identity(struct mcs_out *out) {
  mcs_write_identity(out, ggml_version());
}

void mcs_era_props(struct mcs_out *out) {
  /* The pool an application's main thread has around its work. */
  NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
  mcs_quiet_ggml_log();
  ggml_metal_device_t dev = ggml_metal_device_init(0, 1);
  const struct ggml_metal_device_props *p = ggml_metal_device_get_props(dev);
  mcs_out_printf(out, "{\"has_simdgroup_reduction\":%s,\"has_simdgroup_mm\":%s,\"has_unified_memory\":%s",
                 mcs_bool(p->has_simdgroup_reduction), mcs_bool(p->has_simdgroup_mm), mcs_bool(p->has_unified_memory));
  mcs_out_printf(out, ",\"has_bfloat\":%s,\"has_tensor\":%s,\"use_residency_sets\":%s,\"use_shared_buffers\":%s",
                 mcs_bool(p->has_bfloat), mcs_bool(p->has_tensor), mcs_bool(p->use_residency_sets),
                 mcs_bool(p->use_shared_buffers));
  mcs_out_printf(out, ",\"supports_gpu_family_apple7\":%s,\"gpu_family\":%d,\"device_id\":",
                 mcs_bool(p->supports_gpu_family_apple7), p->gpu_family);
  mcs_out_json_string(out, ggml_metal_device_id_token(p->device_id));
  mcs_out_printf(out, ",\"max_buffer_size\":%zu,\"max_working_set_size\":%zu,\"max_theadgroup_memory_size\":%zu",
                 p->max_buffer_size, p->max_working_set_size, p->max_theadgroup_memory_size);
  mcs_out_printf(out, ",\"desc\":");
  mcs_out_json_string(out, p->desc);
  mcs_out_printf(out, ",\"tuning\":");
  mcs_tuning_tier(out, (int)p->device_id, p->gpu_family);
  mcs_out_printf(out, "}");
  ggml_metal_device_free(dev);
  [pool drain];
}

/* Families past the highest Apple family known (10) as well, as llama.cpp asks up to Apple21. */
enum { MCS_MAX_FAMILY = 12 };

void mcs_era_tables(struct mcs_out *out, const char *names) {
  const size_t chips = sizeof(k_metal_devices) / sizeof(k_metal_devices[0]);
  mcs_out_printf(out, "{\"chips\":[");
  for (size_t i = 0; i < chips; i++) {
    mcs_out_printf(out, "%s{\"name\":", i ? "," : "");
    mcs_out_json_string(out, k_metal_devices[i].name);
    mcs_out_printf(out, ",\"token\":");
    mcs_out_json_string(out, k_metal_devices[i].token);
    mcs_out_printf(out, "}");
  }
  mcs_out_printf(out, "],\"parsed\":[");
  char *copy = strdup(names != NULL ? names : "");
  int first = 1;
  for (char *line = copy; line != NULL;) {
    char *next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    if (next == NULL && *line == '\0') break;
    mcs_out_printf(out, "%s{\"name\":", first ? "" : ",");
    mcs_out_json_string(out, line);
    mcs_out_printf(out, ",\"device_id\":");
    mcs_out_json_string(out, ggml_metal_device_id_token(ggml_metal_device_id_parse(line)));
    mcs_out_printf(out, "}");
    first = 0;
    line = next;
  }
  free(copy);
  mcs_out_printf(out, "],\"tiers\":[");
  first = 1;
  for (size_t i = 0; i <= chips; i++) {
    const int id = i < chips ? (int)k_metal_devices[i].id : (int)GGML_METAL_DEVICE_GENERIC;
    for (int family = 0; family <= MCS_MAX_FAMILY; family++) {
      mcs_out_printf(out, "%s{\"device_id\":", first ? "" : ",");
      mcs_out_json_string(out, ggml_metal_device_id_token((enum ggml_metal_device_id)id));
      mcs_out_printf(out, ",\"gpu_family\":%d,\"tuning\":", family);
      mcs_tuning_tier(out, id, family);
      mcs_out_printf(out, "}");
      first = 0;
    }
  }
  mcs_out_printf(out, "]}");
}
