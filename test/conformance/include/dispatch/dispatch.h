/* A libdispatch stand-in on pthreads with the calls ggml-metal makes (Linux test build only): groups (async, wait),
   semaphores, global and concurrent queues, dispatch_apply. Every async block runs on its own thread, so a block that
   loops until it is told to stop (ggml's residency heartbeat) cannot starve the others. Objects are plain C structs,
   released with dispatch_release as non-ARC Objective-C code does. */
#ifndef MCS_CONFORMANCE_DISPATCH_H
#define MCS_CONFORMANCE_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcs_dispatch_object *dispatch_object_t;
typedef struct mcs_dispatch_object *dispatch_queue_t;
typedef struct mcs_dispatch_object *dispatch_group_t;
typedef struct mcs_dispatch_object *dispatch_semaphore_t;
typedef struct mcs_dispatch_attr *dispatch_queue_attr_t;
typedef uint64_t dispatch_time_t;
typedef void (^dispatch_block_t)(void);

#define DISPATCH_TIME_NOW ((dispatch_time_t)0)
#define DISPATCH_TIME_FOREVER (~(dispatch_time_t)0)
#define DISPATCH_QUEUE_SERIAL ((dispatch_queue_attr_t)0)
extern struct mcs_dispatch_attr mcs_dispatch_queue_attr_concurrent;
#define DISPATCH_QUEUE_CONCURRENT (&mcs_dispatch_queue_attr_concurrent)
#define DISPATCH_APPLY_AUTO ((dispatch_queue_t)0)

/* <sys/qos.h> */
#define QOS_CLASS_USER_INTERACTIVE 0x21
#define QOS_CLASS_USER_INITIATED 0x19
#define QOS_CLASS_DEFAULT 0x15
#define QOS_CLASS_UTILITY 0x11
#define QOS_CLASS_BACKGROUND 0x09

dispatch_queue_t dispatch_get_global_queue(intptr_t identifier, uintptr_t flags);
dispatch_queue_t dispatch_queue_create(const char *label, dispatch_queue_attr_t attr);
void dispatch_async(dispatch_queue_t queue, dispatch_block_t block);
void dispatch_apply(size_t iterations, dispatch_queue_t queue, void (^block)(size_t));

dispatch_group_t dispatch_group_create(void);
void dispatch_group_async(dispatch_group_t group, dispatch_queue_t queue, dispatch_block_t block);
intptr_t dispatch_group_wait(dispatch_group_t group, dispatch_time_t timeout);

dispatch_semaphore_t dispatch_semaphore_create(intptr_t value);
intptr_t dispatch_semaphore_signal(dispatch_semaphore_t semaphore);
intptr_t dispatch_semaphore_wait(dispatch_semaphore_t semaphore, dispatch_time_t timeout);

dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta);
void dispatch_retain(dispatch_object_t object);
void dispatch_release(dispatch_object_t object);

#ifdef __cplusplus
}
#endif

#endif
