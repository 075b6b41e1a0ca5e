/* Props reader for the ggml-metal.m era (llama.cpp up to the 2025 refactor): the device context lives in a static of
   ggml-metal.m and is filled by ggml_backend_metal_device_acq, so the source is compiled into this file to reach it. */
#include "driver.h"

#include "ggml-metal.m"

/* ggml_version() arrived with ggml 0.9 (2025): this era's ggml-base does not export it. */
void mcs_era_identity(struct mcs_out *out) {
  mcs_write_identity(out, NULL, "[]");
}

void mcs_era_props(struct mcs_out *out) {
  /* The pool an application's main thread has around its work. */
  NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
  mcs_quiet_ggml_log();
  struct ggml_backend_metal_device_context *ctx = &g_ggml_ctx_dev_main;
  id<MTLDevice> device = ggml_backend_metal_device_acq(ctx);
  mcs_out_printf(out, "{\"has_simdgroup_reduction\":%s,\"has_simdgroup_mm\":%s,\"has_residency_sets\":%s",
                 mcs_bool(ctx->has_simdgroup_reduction), mcs_bool(ctx->has_simdgroup_mm),
                 mcs_bool(ctx->has_residency_sets));
  mcs_out_printf(out, ",\"has_bfloat\":%s,\"use_bfloat\":%s,\"name\":", mcs_bool(ctx->has_bfloat),
                 mcs_bool(ctx->use_bfloat));
  mcs_out_json_string(out, device != nil ? ctx->name : "");
  mcs_out_printf(out, "}");
  ggml_backend_metal_device_rel(ctx);
  [pool drain];
}

/* ggml-metal.m parses no chip and has no tuning table. */
void mcs_era_tables(struct mcs_out *out, const char *names) {
  (void)names;
  mcs_out_printf(out, "null");
}
