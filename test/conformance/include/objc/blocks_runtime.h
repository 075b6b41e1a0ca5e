/* GNUstep's headers include <objc/blocks_runtime.h> when blocks are on; that header belongs to libobjc2, which GCC's
   runtime lacks. The blocks runtime here is libblocksruntime's (linked before GNUstep, whose own _Block_copy does not
   copy stack blocks). */
#include <Block.h>
