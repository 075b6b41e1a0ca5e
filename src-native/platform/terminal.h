// Process-group facts `exec` needs to forward signals exactly once. Plain POSIX: the same code on macOS and Linux.
#pragma once

namespace mcs {

struct ProcessGroups {
  long own = -1;       // this process's group
  long terminal = -1;  // the foreground group of this process's controlling terminal; -1: no controlling terminal
  long child = -1;     // the child's group; -1: the child is gone
};

ProcessGroups processGroups(long childPid);

}  // namespace mcs
