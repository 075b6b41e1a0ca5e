/* The conformance driver: runs llama.cpp's own Metal device initialisation once per case and returns what it decided,
   as one JSON object per line. Each era has its own props reader (driver-device.m, driver-legacy.m); driver.c runs
   the cases and is shared by the Node addon (addon.c) and the command-line program (cli.c). */
#ifndef MCS_CONFORMANCE_DRIVER_H
#define MCS_CONFORMANCE_DRIVER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A growable output buffer. */
struct mcs_out {
  char *data;
  size_t len;
  size_t cap;
};

void mcs_out_printf(struct mcs_out *out, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Appends `text` as a JSON string literal. */
void mcs_out_json_string(struct mcs_out *out, const char *text);

/* "true" or "false". */
const char *mcs_bool(int value);
/* Sends ggml's log to stderr only when MCS_CONFORMANCE_LOG is set (ggml logs every initialisation at length). */
void mcs_quiet_ggml_log(void);

/* Era-specific: initialises the device as llama.cpp does, appends its props as one JSON object, releases the device. */
void mcs_era_props(struct mcs_out *out);
/* Era-specific: the llama.cpp release the sources came from and ggml's version, as a JSON object. */
void mcs_era_identity(struct mcs_out *out);

#ifdef MCS_RELEASE
/* What each era's mcs_era_identity writes: the release and build configuration the build defines (MCS_RELEASE,
   MCS_TARGET_X86_64, MCS_MACOS_SDK), ggml's version (NULL: a ggml without ggml_version()), and `absent`, a JSON array
   of the fields this era's llama.cpp does not have, which its props leave out. */
static inline void mcs_write_identity(struct mcs_out *out, const char *ggml_version, const char *absent) {
  mcs_out_printf(out, "{\"release\":");
  mcs_out_json_string(out, MCS_RELEASE);
  mcs_out_printf(out, ",\"ggmlVersion\":");
  if (ggml_version != NULL)
    mcs_out_json_string(out, ggml_version);
  else
    mcs_out_printf(out, "null");
  mcs_out_printf(out, ",\"build\":{\"arch\":\"%s\",\"sdk\":%d},\"absent\":%s}", MCS_TARGET_X86_64 ? "x86_64" : "arm64",
                 MCS_MACOS_SDK, absent);
}
#endif

/* Era-specific: llama.cpp's own chip table and what it makes of names and families, as one JSON object (null without
   device_id): {"chips":[{"name","token"}], "parsed":[{"name","device_id"}], "tiers":[{"device_id","gpu_family",
   "tuning"}]}; "chips" is null where the table is local to the parser, "tiers" null without a tuning table. `names`
   holds one device name per line. */
void mcs_era_tables(struct mcs_out *out, const char *names);

/* Runs every case: `cases` holds one line per case, each a space-separated list of NAME=VALUE environment settings
   (an empty line: none). Every name any case sets is unset before each case. Returns the malloc'ed output: one line
   `{"case":N,"props":{...}}` per case. */
char *mcs_run_cases(const char *cases);

/* mcs_era_tables as a malloc'ed string with a trailing newline. */
char *mcs_tables(const char *names);

#ifdef __cplusplus
}
#endif

#endif
