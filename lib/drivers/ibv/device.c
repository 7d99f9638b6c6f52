/*
 * Discovery of libibverbs devices.
 *
 * Owns: the ibv_get_device_list() results and their lifetime. libibverbs keeps
 * an unopened struct ibv_device valid only until its list is freed, so every
 * rv_device made from a list holds a reference on it; the last
 * device_release() frees the list. Never opens a device except briefly in
 * device_active().
 */
#include <errno.h>
#include <stdlib.h>

#include "ibv-driver.h"

static void list_unref(struct rv_ibv_device_list *l)
{
	if (atomic_fetch_sub(&l->refcnt, 1) == 1) {
		ibv_free_device_list(l->list);
		free(l);
	}
}

int rv_ibv_probe(rv_driver_add_fn add, void *cookie)
{
	struct rv_ibv_device_list *l;
	struct ibv_device **list;
	char ebuf[128];
	int n = 0, rc = 0;

	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list) {
		int err = errno ? errno : EIO;

		/* ENOSYS: the kernel has no RDMA support (no
		 * /sys/class/infiniband_verbs). That is "no devices", not a
		 * failure, so that the software device still works. */
		if (err == ENOSYS)
			return 0;
		rv_err(err, "rv_device_list", "ibv_get_device_list failed: %s",
		       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
		if (err == EPERM || err == EACCES)
			rv_err_hint("the process may not read /sys/class/infiniband_verbs; "
				    "check the container or sandbox settings");
		return -err;
	}
	if (n <= 0) {
		ibv_free_device_list(list);
		return 0;
	}

	l = malloc(sizeof(*l));
	if (!l) {
		ibv_free_device_list(list);
		return rv_err(ENOMEM, "rv_device_list", "out of memory for the libibverbs device list");
	}
	l->list = list;
	atomic_init(&l->refcnt, 1); /* probe's own, dropped below */

	for (int i = 0; i < n && list[i]; i++) {
		struct rv_ibv_device *d = malloc(sizeof(*d));
		const char *name = ibv_get_device_name(list[i]);

		if (!d) {
			rc = rv_err(ENOMEM, "rv_device_list", "out of memory for libibverbs device %d", i);
			break;
		}
		d->list = l;
		d->dev = list[i];
		atomic_fetch_add(&l->refcnt, 1);
		/* add() owns d from here on, failure included (it calls
		 * device_release); rc < 0 stops the probe with its message. */
		rc = add(cookie, name ? name : "ibv?", d);
		if (rc < 0)
			break;
		rc = 0;
	}
	list_unref(l);
	return rc;
}

void rv_ibv_device_release(void *drv_dev)
{
	struct rv_ibv_device *d = drv_dev;

	if (!d)
		return;
	list_unref(d->list);
	free(d);
}

bool rv_ibv_device_active(void *drv_dev)
{
	struct rv_ibv_device *d = drv_dev;
	struct ibv_device_attr dattr;
	struct ibv_context *c;
	bool active = false;

	errno = 0;
	c = ibv_open_device(d->dev);
	if (!c) {
		char ebuf[128];
		int err = errno ? errno : ENODEV;

		/* A device that exists but cannot be opened is skipped for the
		 * default: say so, since the fallback may surprise. */
		rv_log(RV_LOG_WARN, "%s is not a default candidate: ibv_open_device failed: %s",
		       ibv_get_device_name(d->dev), rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
		return false;
	}
	if (ibv_query_device(c, &dattr) == 0) {
		for (unsigned p = 1; p <= dattr.phys_port_cnt && !active; p++) {
			struct ibv_port_attr pattr;

			if (ibv_query_port(c, (uint8_t)p, &pattr) == 0 &&
			    pattr.state == IBV_PORT_ACTIVE)
				active = true;
		}
	}
	if (!active)
		rv_log(RV_LOG_DEBUG, "%s has no ACTIVE port", ibv_get_device_name(d->dev));
	ibv_close_device(c);
	return active;
}
