/*
 * Fork safety of handles (see fork.h). Nothing here runs on the data path:
 * a handle check of the parent process costs one load of rv_fork_child and a
 * branch.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core/fork.h"
#include "rverbs-private.h"

int rv_fork_child;
pid_t rv_fork_pid;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child_handler(void)
{
	rv_fork_pid = getpid();
	rv_fork_child = 1;
	/* No handle passes the data path's fast check any more: each takes
	 * the complete one, which refuses the parent's (core/object.h). */
	memset(rv_obj_live_words, 0, sizeof(rv_obj_live_words));
}

static void fork_arm(void)
{
	pthread_atfork(NULL, NULL, fork_child_handler);
}

void rv_fork_track(struct rv_context *ctx)
{
	pthread_once(&fork_once, fork_arm);
	ctx->pid = getpid();
}

int rv_fork_check(const struct rv_object *obj, const char *func)
{
	const struct rv_context *ctx = obj->ctx;
	pid_t me;

	if (!ctx || obj->state != RV_OBJ_LIVE || ctx->pid == 0 || ctx->pid == (me = getpid()))
		return 0;
	rv_err(EPERM, func, "%s #%" PRIu64 " was created in process %d, and this process %d is a fork child of it",
	       rv_obj_type_name(obj->cls->type), obj->id, (int)ctx->pid, (int)me);
	rv_err_hint("a child must not use inherited handles (that would corrupt the parent's resources): "
		    "open a new context in the child, or fork before opening one");
	return -EPERM;
}
