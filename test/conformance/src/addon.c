/* The conformance driver as a Node addon, for the in-process cases: run(cases) → the driver's output text,
   tables(names) → llama.cpp's chip and tuning tables (driver.h). */
#include "driver.h"

#include <node_api.h>
#include <stdlib.h>

typedef char *(*entry_fn)(const char *);

static napi_value call(napi_env env, napi_callback_info info, entry_fn entry) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  size_t len = 0;
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], NULL, 0, &len) != napi_ok) {
    napi_throw_type_error(env, NULL, "the driver takes a string");
    return NULL;
  }
  char *cases = malloc(len + 1);
  if (cases == NULL) abort();
  napi_get_value_string_utf8(env, argv[0], cases, len + 1, &len);
  char *output = entry(cases);
  free(cases);
  napi_value result;
  napi_create_string_utf8(env, output, NAPI_AUTO_LENGTH, &result);
  free(output);
  return result;
}

static napi_value run(napi_env env, napi_callback_info info) {
  return call(env, info, mcs_run_cases);
}
static napi_value tables(napi_env env, napi_callback_info info) {
  return call(env, info, mcs_tables);
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "run", NAPI_AUTO_LENGTH, run, NULL, &fn);
  napi_set_named_property(env, exports, "run", fn);
  napi_create_function(env, "tables", NAPI_AUTO_LENGTH, tables, NULL, &fn);
  napi_set_named_property(env, exports, "tables", fn);
  return exports;
}
