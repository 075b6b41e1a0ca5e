/* The conformance driver as a program, for `metal-cap-shim exec`: cases on stdin, one JSON line per case on stdout.
   With --tables: device names on stdin, llama.cpp's chip and tuning tables as one JSON object on stdout. */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  size_t cap = 1 << 16, len = 0;
  char *input = malloc(cap);
  if (input == NULL) return 2;
  size_t n;
  while ((n = fread(input + len, 1, cap - len - 1, stdin)) > 0) {
    len += n;
    if (len + 1 == cap) {
      cap *= 2;
      char *bigger = realloc(input, cap);
      if (bigger == NULL) return 2;
      input = bigger;
    }
  }
  input[len] = '\0';
  char *output = argc > 1 && strcmp(argv[1], "--tables") == 0 ? mcs_tables(input) : mcs_run_cases(input);
  fputs(output, stdout);
  free(output);
  free(input);
  return fflush(stdout) == 0 ? 0 : 1;
}
