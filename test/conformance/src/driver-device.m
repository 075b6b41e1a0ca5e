/* Props reader for the ggml-metal-device.m eras (llama.cpp b6673 and later): ggml_metal_device_init, as the Metal
   backend calls it when it registers, then every field of ggml_metal_device_props that a rule predicts. The source
   is compiled into this file to reach its statics (the chip table and name parser).

   What the era has comes from eras.mjs, as definitions build.mjs passes (driverDefines): MCS_DEVICE_INIT (the
   parameters of ggml_metal_device_init: 0 none, 1 the device, 2 the device and the device count), MCS_HAS_<FIELD>
   for the props fields an era may lack (has_tensor, desc, device_id, gpu_family), MCS_CHIPS (0: no device_id,
   1: the parser alone, 2: the chip table and ggml_metal_device_id_token) and MCS_TUNING (a tuning probe is linked).
   A field the era lacks is left out of the props and named in the identity's "absent" list. */
#include "driver.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The residency heartbeat (ggml_metal_rsets_init, b7347 and later) sleeps between its requests: 500 ms up to b8390,
   5 ms later; ggml_metal_device_free stops it and waits for it, so each case would wait out the sleep it is in. Its
   usleep, the only one in ggml-metal-device.m, is this one: the same sleep, cut short only while the driver frees the
   device (teardown), so that the heartbeat sees ggml's stop flag at once. */
static pthread_mutex_t heartbeat_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t heartbeat_wake = PTHREAD_COND_INITIALIZER;
static int heartbeat_teardown;

static int mcs_heartbeat_usleep(useconds_t usec) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += (time_t)(usec / 1000000u);
  deadline.tv_nsec += (long)(usec % 1000000u) * 1000;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&heartbeat_lock);
  int rc = 0;
  while (!heartbeat_teardown && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&heartbeat_wake, &heartbeat_lock, &deadline);
  pthread_mutex_unlock(&heartbeat_lock);
  return 0;
}

static void set_teardown(int on) {
  pthread_mutex_lock(&heartbeat_lock);
  heartbeat_teardown = on;
  pthread_cond_broadcast(&heartbeat_wake);
  pthread_mutex_unlock(&heartbeat_lock);
}

#define usleep mcs_heartbeat_usleep
#include "ggml-metal-device.m"
#undef usleep

#if MCS_CHIPS == 1
/* build.mjs writes it from ggml-metal-device.h: ggml_metal_device_id's enumerators, by value. */
#include "mcs-device-ids.h"
#endif

#if MCS_TUNING
/* tuning-chip.cpp / tuning-family.cpp: which table tier ggml-metal-tuning.cpp's fa_vec_pick consults first. */
void mcs_tuning_tier(struct mcs_out *out, int device_id, int gpu_family);
#endif

#if MCS_CHIPS
/* llama.cpp's name of a device_id: its own function where it has one, else its enumerator's name. */
static const char *device_id_name(enum ggml_metal_device_id id) {
#if MCS_CHIPS == 2
  return ggml_metal_device_id_token(id);
#else
  const size_t n = sizeof(mcs_device_id_names) / sizeof(mcs_device_id_names[0]);
  return (size_t)id < n ? mcs_device_id_names[id] : "(out of range)";
#endif
}
#endif

void mcs_era_identity(struct mcs_out *out) {
  static const struct {
    const char *name;
    int present;
  } fields[] = {
      {"has_tensor", MCS_HAS_HAS_TENSOR}, {"desc", MCS_HAS_DESC}, {"device_id", MCS_HAS_DEVICE_ID},
      {"gpu_family", MCS_HAS_GPU_FAMILY}, {"tuning", MCS_TUNING},
  };
  struct mcs_out absent = {0};
  mcs_out_printf(&absent, "[");
  int first = 1;
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    if (fields[i].present) continue;
    mcs_out_printf(&absent, "%s", first ? "" : ",");
    mcs_out_json_string(&absent, fields[i].name);
    first = 0;
  }
  mcs_out_printf(&absent, "]");
  mcs_write_identity(out, ggml_version(), absent.data);
  free(absent.data);
}

void mcs_era_props(struct mcs_out *out) {
  /* The pool an application's main thread has around its work. */
  NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
  mcs_quiet_ggml_log();
#if MCS_DEVICE_INIT == 0
  ggml_metal_device_t dev = ggml_metal_device_init();
#elif MCS_DEVICE_INIT == 1
  ggml_metal_device_t dev = ggml_metal_device_init(0);
#else
  ggml_metal_device_t dev = ggml_metal_device_init(0, 1);
#endif
  const struct ggml_metal_device_props *p = ggml_metal_device_get_props(dev);
  mcs_out_printf(out, "{\"has_simdgroup_reduction\":%s,\"has_simdgroup_mm\":%s,\"has_unified_memory\":%s",
                 mcs_bool(p->has_simdgroup_reduction), mcs_bool(p->has_simdgroup_mm), mcs_bool(p->has_unified_memory));
  mcs_out_printf(out, ",\"has_bfloat\":%s", mcs_bool(p->has_bfloat));
#if MCS_HAS_HAS_TENSOR
  mcs_out_printf(out, ",\"has_tensor\":%s", mcs_bool(p->has_tensor));
#endif
  mcs_out_printf(out, ",\"use_residency_sets\":%s,\"use_shared_buffers\":%s", mcs_bool(p->use_residency_sets),
                 mcs_bool(p->use_shared_buffers));
  mcs_out_printf(out, ",\"supports_gpu_family_apple7\":%s", mcs_bool(p->supports_gpu_family_apple7));
#if MCS_HAS_GPU_FAMILY
  mcs_out_printf(out, ",\"gpu_family\":%d", p->gpu_family);
#endif
#if MCS_HAS_DEVICE_ID
  mcs_out_printf(out, ",\"device_id\":");
  mcs_out_json_string(out, device_id_name(p->device_id));
#endif
  mcs_out_printf(out, ",\"max_buffer_size\":%zu,\"max_working_set_size\":%zu,\"max_theadgroup_memory_size\":%zu",
                 p->max_buffer_size, p->max_working_set_size, p->max_theadgroup_memory_size);
#if MCS_HAS_DESC
  /* From b8390 on, name is "MTL<n>" and desc the device's name. */
  mcs_out_printf(out, ",\"desc\":");
  mcs_out_json_string(out, p->desc);
#else
  /* Before, name is the device's name. */
  mcs_out_printf(out, ",\"name\":");
  mcs_out_json_string(out, p->name);
#endif
#if MCS_TUNING
  mcs_out_printf(out, ",\"tuning\":");
  mcs_tuning_tier(out, (int)p->device_id, p->gpu_family);
#endif
  mcs_out_printf(out, "}");
  set_teardown(1);
  ggml_metal_device_free(dev);
  set_teardown(0);
  [pool drain];
}

/* Families past the highest Apple family known (10) as well, as llama.cpp asks up to Apple21. */
enum { MCS_MAX_FAMILY = 12 };

#if MCS_CHIPS
/* Appends "parsed": what ggml_metal_device_id_parse makes of each line of `names`. */
static void write_parsed(struct mcs_out *out, const char *names) {
  mcs_out_printf(out, "\"parsed\":[");
  char *copy = strdup(names != NULL ? names : "");
  int first = 1;
  for (char *line = copy; line != NULL;) {
    char *next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    if (next == NULL && *line == '\0') break;
    mcs_out_printf(out, "%s{\"name\":", first ? "" : ",");
    mcs_out_json_string(out, line);
    mcs_out_printf(out, ",\"device_id\":");
    mcs_out_json_string(out, device_id_name(ggml_metal_device_id_parse(line)));
    mcs_out_printf(out, "}");
    first = 0;
    line = next;
  }
  free(copy);
  mcs_out_printf(out, "]");
}
#endif

void mcs_era_tables(struct mcs_out *out, const char *names) {
#if MCS_CHIPS == 0
  /* No device_id: nothing parses a chip. */
  (void)names;
  mcs_out_printf(out, "null");
#elif MCS_CHIPS == 1
  /* The parser's table is local to it: the chips are not listed, only what it makes of each name. */
  mcs_out_printf(out, "{\"chips\":null,");
  write_parsed(out, names);
  mcs_out_printf(out, ",\"tiers\":null}");
#else
  const size_t chips = sizeof(k_metal_devices) / sizeof(k_metal_devices[0]);
  mcs_out_printf(out, "{\"chips\":[");
  for (size_t i = 0; i < chips; i++) {
    mcs_out_printf(out, "%s{\"name\":", i ? "," : "");
    mcs_out_json_string(out, k_metal_devices[i].name);
    mcs_out_printf(out, ",\"token\":");
    mcs_out_json_string(out, k_metal_devices[i].token);
    mcs_out_printf(out, "}");
  }
  mcs_out_printf(out, "],");
  write_parsed(out, names);
#if MCS_TUNING
  mcs_out_printf(out, ",\"tiers\":[");
  int first = 1;
  for (size_t i = 0; i <= chips; i++) {
    const int id = i < chips ? (int)k_metal_devices[i].id : (int)GGML_METAL_DEVICE_GENERIC;
    for (int family = 0; family <= MCS_MAX_FAMILY; family++) {
      mcs_out_printf(out, "%s{\"device_id\":", first ? "" : ",");
      mcs_out_json_string(out, device_id_name((enum ggml_metal_device_id)id));
      mcs_out_printf(out, ",\"gpu_family\":%d,\"tuning\":", family);
      mcs_tuning_tier(out, id, family);
      mcs_out_printf(out, "}");
      first = 0;
    }
  }
  mcs_out_printf(out, "]}");
#else
  mcs_out_printf(out, ",\"tiers\":null}");
#endif
#endif
}
