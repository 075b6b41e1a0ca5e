/* Runs the cases (driver.h). */
#include "driver.h"

#include "ggml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(struct mcs_out *out, size_t more) {
  if (out->len + more + 1 <= out->cap) return;
  size_t cap = out->cap == 0 ? 4096 : out->cap;
  while (cap < out->len + more + 1) cap *= 2;
  char *data = realloc(out->data, cap);
  if (data == NULL) abort();
  out->data = data;
  out->cap = cap;
}

void mcs_out_printf(struct mcs_out *out, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  if (n < 0) abort();
  reserve(out, (size_t)n);
  va_start(args, format);
  vsnprintf(out->data + out->len, (size_t)n + 1, format, args);
  va_end(args);
  out->len += (size_t)n;
}

void mcs_out_json_string(struct mcs_out *out, const char *text) {
  mcs_out_printf(out, "\"");
  for (const unsigned char *p = (const unsigned char *)(text != NULL ? text : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      mcs_out_printf(out, "\\%c", *p);
    else if (*p < 0x20)
      mcs_out_printf(out, "\\u%04x", *p);
    else
      mcs_out_printf(out, "%c", *p);
  }
  mcs_out_printf(out, "\"");
}

/* The settings of one case line: pointers into a private copy of the line. */
struct setting {
  char *name;
  char *value;
};

static size_t parse_line(char *line, struct setting *settings, size_t max) {
  size_t n = 0;
  for (char *save = NULL, *tok = strtok_r(line, " ", &save); tok != NULL && n < max; tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    if (eq == NULL) continue;
    *eq = '\0';
    settings[n].name = tok;
    settings[n].value = eq + 1;
    n++;
  }
  return n;
}

enum { MAX_SETTINGS = 32, MAX_NAMES = 64 };

char *mcs_run_cases(const char *cases) {
  char *all = strdup(cases != NULL ? cases : "");
  if (all == NULL) abort();

  /* First pass: every name any case sets. */
  char *names[MAX_NAMES];
  size_t name_count = 0;
  char *scan = strdup(all);
  for (char *save = NULL, *line = strtok_r(scan, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    struct setting settings[MAX_SETTINGS];
    size_t n = parse_line(line, settings, MAX_SETTINGS);
    for (size_t i = 0; i < n; i++) {
      size_t j = 0;
      while (j < name_count && strcmp(names[j], settings[i].name) != 0) j++;
      if (j == name_count && name_count < MAX_NAMES) names[name_count++] = strdup(settings[i].name);
    }
  }
  free(scan);

  struct mcs_out out = {0};
  mcs_out_printf(&out, "{\"identity\":");
  mcs_era_identity(&out);
  mcs_out_printf(&out, "}\n");

  /* Second pass, line by line; empty lines count as cases (no settings), so split by hand. */
  size_t index = 0;
  for (char *line = all; line != NULL; index++) {
    char *next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    if (next == NULL && *line == '\0') break; /* the text's trailing newline */
    for (size_t j = 0; j < name_count; j++) unsetenv(names[j]);
    struct setting settings[MAX_SETTINGS];
    size_t n = parse_line(line, settings, MAX_SETTINGS);
    for (size_t i = 0; i < n; i++) setenv(settings[i].name, settings[i].value, 1);
    mcs_out_printf(&out, "{\"case\":%zu,\"props\":", index);
    mcs_era_props(&out);
    mcs_out_printf(&out, "}\n");
    line = next;
  }
  for (size_t j = 0; j < name_count; j++) {
    unsetenv(names[j]);
    free(names[j]);
  }
  free(all);
  reserve(&out, 0);
  out.data[out.len] = '\0';
  return out.data;
}

char *mcs_tables(const char *names) {
  struct mcs_out out = {0};
  mcs_era_tables(&out, names);
  mcs_out_printf(&out, "\n");
  return out.data;
}

const char *mcs_bool(int value) {
  return value ? "true" : "false";
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
  (void)level;
  (void)user;
  if (getenv("MCS_CONFORMANCE_LOG") != NULL) fputs(text, stderr);
}

void mcs_quiet_ggml_log(void) {
  ggml_log_set(quiet, NULL);
}
