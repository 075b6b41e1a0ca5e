/* Runs several conformance drivers one after the other, each with the same cases on its stdin, so that one
   `metal-cap-shim exec` run covers every era: the drivers inherit exec's environment, and with it the injector.
   Usage: launcher DRIVER... (cases on stdin). Prints "@@ <index>\n" and then each driver's output. Exits non-zero
   as soon as a driver fails, with that driver's status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *read_all(FILE *in, size_t *len) {
  size_t cap = 1 << 16;
  char *data = malloc(cap);
  if (data == NULL) exit(2);
  *len = 0;
  size_t n;
  while ((n = fread(data + *len, 1, cap - *len, in)) > 0) {
    *len += n;
    if (*len == cap) {
      cap *= 2;
      data = realloc(data, cap);
      if (data == NULL) exit(2);
    }
  }
  return data;
}

int main(int argc, char **argv) {
  size_t len;
  char *cases = read_all(stdin, &len);
  for (int i = 1; i < argc; i++) {
    int to_child[2];
    if (pipe(to_child) != 0) return 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      dup2(to_child[0], STDIN_FILENO);
      close(to_child[0]);
      close(to_child[1]);
      execl(argv[i], argv[i], (char *)NULL);
      _exit(127);
    }
    close(to_child[0]);
    printf("@@ %d\n", i - 1);
    fflush(stdout);
    /* The cases are small (a few kilobytes), below the pipe's buffer, so this cannot block on the child. */
    if (write(to_child[1], cases, len) != (ssize_t)len) return 2;
    close(to_child[1]);
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) return 2;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "%s: %s %d\n", argv[i], WIFSIGNALED(status) ? "killed by signal" : "exited",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
  free(cases);
  return 0;
}
