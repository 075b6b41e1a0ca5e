/*
 * Simulation-only additions (not Apple API): the host facts of the loaded snapshot, which on a Mac come from sysctl
 * and NSProcessInfo, and counters that let tests see whether a process touched Metal at all. Strings live as long as
 * the process.
 */
#ifndef METAL_CAP_SHIM_METAL_SIM_H
#define METAL_CAP_SHIM_METAL_SIM_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *snapshotId; /* NULL when no snapshot is selected */
  const char *platform;
  const char *osVersion; /* NULL: the snapshot records no value */
  const char *osBuild;
  const char *model;
  int isVirtualMachine; /* 1, 0, or -1 when unrecorded */
  const char *arch;
  int hasMemoryBytes; /* 0 when the snapshot records no hw.memsize */
  unsigned long long memoryBytes;
  int translated;       /* sysctl.proc_translated: 1, 0, or -1 when unrecorded */
  const char *cpuBrand; /* machdep.cpu.brand_string; NULL: the snapshot records none */
} MTLSimHostFacts;

/* Fills `out` and returns 1 when a snapshot is loaded, 0 when none is selected. */
int MTLSimGetHostFacts(MTLSimHostFacts *out);

/* Test-only: how often this process called MTLCreateSystemDefaultDevice() and MTLCopyAllDevices(). On a dual-GPU Mac
   either call switches to the discrete GPU, so code that only needs host facts must make none. With
   METAL_CAP_SHIM_SIM_COUNTS_FILE set, the library also writes them to that file as JSON at exit. */
typedef struct {
  unsigned long createSystemDefaultDevice;
  unsigned long copyAllDevices;
} MTLSimDeviceCalls;

void MTLSimGetDeviceCalls(MTLSimDeviceCalls *out);

/* Test-only: loads the snapshot `selector` names (a name from snapshots/, or the path of a snapshot or of a simulation
   file, as METAL_CAP_SHIM_SIM_SNAPSHOT takes; NULL or empty: no device) in place of the loaded one, and sets the
   device-call counts above back to zero. The environment's snapshot is never loaded after this. Returns NULL when the
   snapshot loaded, or why not (valid until the next call), after which no device is loaded, as a process started with
   that selector has none. What the earlier snapshot made stays: its device objects keep answering as its devices, its
   host facts' strings stay valid, and its classes serve a later snapshot's devices of the same name and layout (another
   layout under a name already used is refused). Call it only while no other thread uses Metal. */
const char *MTLSimLoadSnapshot(const char *selector);

/* Test-only: how many times this process loaded a snapshot (or selected none): the environment's at the first call,
   and each MTLSimLoadSnapshot(). A stock answer recorded under one count is not about the devices of another. */
unsigned long MTLSimGetLoads(void);

/* Test-only: how many NoCopy buffers were released after the memory under them had been unmapped (Metal may read a
   buffer until it is released; unmapping first is the crash AdaptiveCpp PR 2067 describes). */
unsigned long MTLSimGetNoCopyAfterUnmap(void);
/* NoCopy buffers created without a deallocator (nil): their memory then belongs to no one once Metal lets go. */
unsigned long MTLSimGetNoCopyWithoutDeallocator(void);
/* Descriptors on a file doctor generated (a name with "metal-cap-shim-doctor-") that were open without close-on-exec
   when a NoCopy buffer was made, so far in this process: a program started then would have inherited them. Counted
   from /proc/self/fd (Linux). */
unsigned long MTLSimGetInheritableDoctorFiles(void);
/* Pages of the memory under NoCopy buffers that were not resident (mincore) when the buffer was made, so far in this
   process: a real GPU would page them in inside its first dispatch, under the probe's deadline. */
unsigned long MTLSimGetNoCopyColdPages(void);

#ifdef __cplusplus
}
#endif

#endif
