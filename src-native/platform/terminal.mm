#include "terminal.h"

#include <fcntl.h>
#include <sys/types.h>
#include <termios.h>
#include <unistd.h>

namespace mcs {

ProcessGroups processGroups(long childPid) {
  ProcessGroups groups;
  groups.own = static_cast<long>(getpgrp());
  // /dev/tty is always the controlling terminal, whatever stdin is; O_NOCTTY so opening it never acquires one.
  int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
  if (fd >= 0) {
    groups.terminal = static_cast<long>(tcgetpgrp(fd));
    close(fd);
  }
  if (childPid > 0) groups.child = static_cast<long>(getpgid(static_cast<pid_t>(childPid)));
  return groups;
}

}  // namespace mcs
