/*
 * Fork safety of handles: a fork child of a process that created a context
 * refuses the handles it inherited (using them would corrupt the parent's
 * resources), and makes its own.
 *
 * Owns: the flag the data path reads (rv_fork_child), the pid a context was
 * created in, and the pthread_atfork child handler, which also turns off the
 * data path's one-compare handle check (rv_obj_live_words). The memlock
 * account resets itself in a child (lib/memory.c): nothing here calls above
 * the core.
 */
#ifndef RV_CORE_FORK_H
#define RV_CORE_FORK_H

#include <sys/types.h>

struct rv_context;
struct rv_object;

/* Set in a fork child of a process that created a context (pthread_atfork). */
extern int rv_fork_child __attribute__((visibility("hidden")));
/* This process's pid, once rv_fork_child is set (read on the data path). */
extern pid_t rv_fork_pid __attribute__((visibility("hidden")));

/* Record the creating process in ctx and arm the fork handler. */
void rv_fork_track(struct rv_context *ctx);
/* -EPERM with a message when obj belongs to a context of another process. */
int rv_fork_check(const struct rv_object *obj, const char *func);

#endif
