/*
 * GNUstep's headers include <objc/blocks_runtime.h> (libobjc2's) when blocks are on. The Linux build uses GCC's
 * libobjc, which has none, with the BlocksRuntime library (libblocksruntime-dev) for blocks: this is its header.
 */
#include <Block.h>
