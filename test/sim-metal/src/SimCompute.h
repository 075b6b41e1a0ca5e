/*
 * The simulated Metal's compute subset (SimCompute.mm), as SimMetal.mm sees it: two calls while it builds devices.
 */
#ifndef METAL_CAP_SHIM_SIM_COMPUTE_H
#define METAL_CAP_SHIM_SIM_COMPUTE_H

#import <Foundation/Foundation.h>
#include <stddef.h>

/* Reads device `index`'s optional `doctor` section from its snapshot entry; `osVersion` is the snapshot host's macOS
   version (NULL when unrecorded), which decides the MSL versions and whether residency sets exist. */
void simComputeReadDevice(size_t index, NSDictionary *device, const char *osVersion);

/* Gives the device object's class the compute methods (and residency sets where the device has them). */
void simComputeAttachDevice(id device, size_t index);

#endif
