// One runner per doctor probe. Each compiles its kernel, dispatches it under the context's deadline and compares
// the GPU's numbers with a CPU reference computed here. Called inside an autorelease pool by runDoctor.
#pragma once

#include "doctor_gpu.h"

namespace mcs {

ProbeOutcome runSimdgroupReduction(ProbeContext &ctx);
ProbeOutcome runSimdgroupMatrix(ProbeContext &ctx);
ProbeOutcome runBfloat(ProbeContext &ctx);
ProbeOutcome runThreadgroupMemory(ProbeContext &ctx);
ProbeOutcome runNocopyMmap(ProbeContext &ctx);  // doctor_nocopy.mm
ProbeOutcome runResidencySet(ProbeContext &ctx);
ProbeOutcome runHeap(ProbeContext &ctx);  // doctor_heap.mm

// CPU references, exposed for the runners in other files.
uint16_t floatToBfloatBits(float value);  // round to nearest, ties to even
float bfloatBitsToFloat(uint16_t bits);
uint16_t floatToHalfBits(float value);  // round to nearest, ties to even
float halfBitsToFloat(uint16_t bits);

}  // namespace mcs
