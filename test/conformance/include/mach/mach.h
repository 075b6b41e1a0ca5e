/* The Mach virtual-memory calls ggml-metal makes under TARGET_OS_OSX, over mmap (Linux test build only). */
#ifndef MCS_CONFORMANCE_MACH_H
#define MCS_CONFORMANCE_MACH_H

#include <stdint.h>
#include <stddef.h>
#include <sys/mman.h>

typedef int kern_return_t;
typedef unsigned int vm_map_t;
typedef uintptr_t vm_address_t;
typedef uintptr_t vm_size_t;

#define KERN_SUCCESS 0
#define KERN_NO_SPACE 3
#define VM_FLAGS_ANYWHERE 1

static inline vm_map_t mach_task_self(void) {
  return 1;
}

static inline kern_return_t vm_allocate(vm_map_t task, vm_address_t *address, vm_size_t size, int flags) {
  (void)task;
  (void)flags;
  /* vm_allocate hands out zero-filled, page-aligned memory, as anonymous mmap does. */
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return KERN_NO_SPACE;
  *address = (vm_address_t)p;
  return KERN_SUCCESS;
}

static inline kern_return_t vm_deallocate(vm_map_t task, vm_address_t address, vm_size_t size) {
  (void)task;
  return munmap((void *)address, size) == 0 ? KERN_SUCCESS : KERN_NO_SPACE;
}

#endif
