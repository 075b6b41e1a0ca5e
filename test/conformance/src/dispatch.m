/* The libdispatch stand-in (include/dispatch/dispatch.h): each async block starts at once on a thread of its own,
   counted by its group. Like libdispatch's, the threads are kept and reused: a block goes to an idle thread, or to a
   new one when none is idle, so no block ever waits for another (ggml's residency heartbeat runs until it is told to
   stop). Each ggml initialisation loads its kernel sources on about twenty blocks; starting a thread for each made
   thread creation most of the time a conformance case took. Like libdispatch, it drains an autorelease pool around
   each block. */
#include <dispatch/dispatch.h>

#import <Foundation/Foundation.h>

#include <Block.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

enum mcs_kind { MCS_QUEUE, MCS_GROUP, MCS_SEMAPHORE };

struct mcs_dispatch_object {
  enum mcs_kind kind;
  int refs;       /* 0 for the global queue: never freed */
  intptr_t count; /* group: blocks still running; semaphore: its value */
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int concurrent;
  pthread_mutex_t serial; /* a serial queue runs one block at a time */
};

struct mcs_dispatch_attr {
  int concurrent;
};
struct mcs_dispatch_attr mcs_dispatch_queue_attr_concurrent = {1};

static struct mcs_dispatch_object *make(enum mcs_kind kind, int concurrent, intptr_t count) {
  struct mcs_dispatch_object *o = calloc(1, sizeof *o);
  if (o == NULL) abort();
  o->kind = kind;
  o->refs = 1;
  o->concurrent = concurrent;
  o->count = count;
  pthread_mutex_init(&o->lock, NULL);
  pthread_cond_init(&o->changed, NULL);
  pthread_mutex_init(&o->serial, NULL);
  return o;
}

static struct mcs_dispatch_object global = {
    MCS_QUEUE, 0, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1, PTHREAD_MUTEX_INITIALIZER,
};

dispatch_queue_t dispatch_get_global_queue(intptr_t identifier, uintptr_t flags) {
  (void)identifier;
  (void)flags;
  return &global;
}

dispatch_queue_t dispatch_queue_create(const char *label, dispatch_queue_attr_t attr) {
  (void)label;
  return make(MCS_QUEUE, attr != NULL && attr->concurrent, 0);
}

void dispatch_retain(dispatch_object_t o) {
  if (o == NULL || o->refs == 0) return;
  __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
}

void dispatch_release(dispatch_object_t o) {
  if (o == NULL || o->refs == 0) return;
  if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  pthread_mutex_destroy(&o->lock);
  pthread_cond_destroy(&o->changed);
  pthread_mutex_destroy(&o->serial);
  free(o);
}

struct job {
  dispatch_block_t block;
  dispatch_queue_t queue;
  dispatch_group_t group;
};

static void run_job(struct job *job) {
  int serial = !job->queue->concurrent;
  if (serial) pthread_mutex_lock(&job->queue->serial);
  NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
  job->block();
  [pool drain];
  if (serial) pthread_mutex_unlock(&job->queue->serial);
  Block_release(job->block);
  if (job->group != NULL) {
    pthread_mutex_lock(&job->group->lock);
    if (--job->group->count == 0) pthread_cond_broadcast(&job->group->changed);
    pthread_mutex_unlock(&job->group->lock);
    dispatch_release(job->group);
  }
  dispatch_release(job->queue);
  free(job);
}

/* A kept thread: waits, idle, for its next job. */
struct worker {
  pthread_cond_t wake;
  struct job *job;
  struct worker *next;
};

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct worker *idle_workers;

static void *worker_main(void *arg) {
  struct worker *w = arg;
  pthread_mutex_lock(&workers_lock);
  for (;;) {
    struct job *job = w->job;
    pthread_mutex_unlock(&workers_lock);
    run_job(job);
    pthread_mutex_lock(&workers_lock);
    w->job = NULL;
    w->next = idle_workers;
    idle_workers = w;
    while (w->job == NULL) pthread_cond_wait(&w->wake, &workers_lock);
  }
  return NULL;
}

static void start(dispatch_queue_t queue, dispatch_group_t group, dispatch_block_t block) {
  struct job *job = malloc(sizeof *job);
  if (job == NULL) abort();
  job->block = Block_copy(block);
  job->queue = queue;
  job->group = group;
  dispatch_retain(queue);
  if (group != NULL) {
    dispatch_retain(group);
    pthread_mutex_lock(&group->lock);
    group->count++;
    pthread_mutex_unlock(&group->lock);
  }
  pthread_mutex_lock(&workers_lock);
  struct worker *w = idle_workers;
  if (w != NULL) {
    idle_workers = w->next;
    w->job = job;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&workers_lock);
    return;
  }
  pthread_mutex_unlock(&workers_lock);
  w = calloc(1, sizeof *w);
  if (w == NULL) abort();
  pthread_cond_init(&w->wake, NULL);
  w->job = job;
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&thread, &attr, worker_main, w) != 0) abort();
  pthread_attr_destroy(&attr);
}

void dispatch_async(dispatch_queue_t queue, dispatch_block_t block) {
  start(queue, NULL, block);
}

void dispatch_apply(size_t iterations, dispatch_queue_t queue, void (^block)(size_t)) {
  (void)queue;
  for (size_t i = 0; i < iterations; i++) block(i);
}

dispatch_group_t dispatch_group_create(void) {
  return make(MCS_GROUP, 0, 0);
}

void dispatch_group_async(dispatch_group_t group, dispatch_queue_t queue, dispatch_block_t block) {
  start(queue, group, block);
}

static int wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, dispatch_time_t timeout) {
  if (timeout == DISPATCH_TIME_FOREVER) return pthread_cond_wait(cond, lock);
  struct timespec deadline = {(time_t)(timeout / 1000000000u), (long)(timeout % 1000000000u)};
  return pthread_cond_timedwait(cond, lock, &deadline);
}

intptr_t dispatch_group_wait(dispatch_group_t group, dispatch_time_t timeout) {
  pthread_mutex_lock(&group->lock);
  int rc = 0;
  while (group->count > 0 && rc != ETIMEDOUT) rc = wait_until(&group->changed, &group->lock, timeout);
  intptr_t left = group->count;
  pthread_mutex_unlock(&group->lock);
  return left == 0 ? 0 : 1;
}

dispatch_semaphore_t dispatch_semaphore_create(intptr_t value) {
  return make(MCS_SEMAPHORE, 0, value);
}

intptr_t dispatch_semaphore_signal(dispatch_semaphore_t s) {
  pthread_mutex_lock(&s->lock);
  s->count++;
  pthread_cond_signal(&s->changed);
  pthread_mutex_unlock(&s->lock);
  return 0;
}

intptr_t dispatch_semaphore_wait(dispatch_semaphore_t s, dispatch_time_t timeout) {
  pthread_mutex_lock(&s->lock);
  int rc = 0;
  while (s->count <= 0 && rc != ETIMEDOUT) rc = wait_until(&s->changed, &s->lock, timeout);
  intptr_t result = s->count > 0 ? (s->count--, 0) : 1;
  pthread_mutex_unlock(&s->lock);
  return result;
}

/* An absolute CLOCK_REALTIME deadline in nanoseconds, which is what pthread_cond_timedwait takes. */
dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta) {
  if (when == DISPATCH_TIME_FOREVER) return DISPATCH_TIME_FOREVER;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t base = when == DISPATCH_TIME_NOW ? (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec : when;
  return base + (uint64_t)delta;
}
