/*
 * The simulated Metal's compute subset (SimCompute.mm), as SimMetal.mm sees it. Devices are addressed by their record
 * index (the objects' _simIndex), unique in the process across the snapshots it loads.
 */
#ifndef METAL_CAP_SHIM_SIM_COMPUTE_H
#define METAL_CAP_SHIM_SIM_COMPUTE_H

#import <Foundation/Foundation.h>
#include <stddef.h>

/* How many device records one process may load, over all its snapshots. */
constexpr size_t kSimMaxDeviceRecords = 1024;

/* Reads device `index`'s optional `doctor` section from its snapshot entry; `osVersion` is the snapshot host's macOS
   version (NULL when unrecorded), which decides the MSL versions and whether residency sets exist. */
void simComputeReadDevice(size_t index, NSDictionary *device, const char *osVersion);

/* Gives the device object's class the compute methods (and residency sets where the device has them). */
void simComputeAttachDevice(id device, size_t index);

/* False for the optional compute API (heaps, residency sets) device `index` lacks, even where its class, made or reused
   for another snapshot's device, has the method. */
bool simComputeResponds(size_t index, SEL sel);

/* Forgets every device record (the fuzz harness, between inputs). */
void simComputeForget(void);

#endif
