/*
 * Devices: discovery across the built-in drivers and the default-device rule.
 *
 * Every rv_device_list() probes afresh (as ibv_get_device_list does), so a
 * closed device handle never hides the device from later lists. The library
 * keeps no global device table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static const struct rv_driver *const drivers[] = {
#ifdef RV_HAVE_IBV_DRIVER
	&rv_driver_ibv,
#endif
#ifdef RV_HAVE_SOFT_DRIVER
	&rv_driver_soft,
#endif
	NULL,
};

static _Atomic uint64_t next_device_id;

static void device_release(struct rv_object *obj)
{
	struct rv_device *dev = (struct rv_device *)obj;
	if (dev->drv->device_release)
		dev->drv->device_release(dev->drv_dev);
}

static const struct rv_object_class device_class = {
	.type = RV_OBJ_DEVICE,
	.name = "device",
	.destroy = NULL,
	.release = device_release,
};

struct probe_state {
	const struct rv_driver *drv;
	rv_device **list;
	size_t n, cap;
	int rc;
};

static int probe_add(void *cookie, const char *name, void *drv_dev)
{
	struct probe_state *ps = cookie;
	struct rv_device *dev;

	if (ps->n + 1 >= ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 8;
		rv_device **n = realloc(ps->list, cap * sizeof(*n));
		if (!n)
			goto nomem;
		ps->list = n;
		ps->cap = cap;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		goto nomem;
	rv_obj_init(&dev->obj, &device_class, NULL);
	dev->obj.id = atomic_fetch_add(&next_device_id, 1);
	dev->drv = ps->drv;
	dev->drv_dev = drv_dev;
	dev->kind = ps->drv->kind;
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	ps->list[ps->n++] = dev;
	ps->list[ps->n] = NULL;
	return 0;
nomem:
	if (ps->drv->device_release)
		ps->drv->device_release(drv_dev);
	ps->rc = -ENOMEM;
	return -ENOMEM;
}

int rv_device_new_internal(const struct rv_driver *drv, const char *name, void *drv_dev,
			   rv_device **ret_dev)
{
	struct probe_state ps = {.drv = drv};
	int rc;

	ps.list = calloc(1, sizeof(*ps.list));
	if (!ps.list) {
		/* As probe_add does on failure: drv_dev is the device's or released. */
		if (drv->device_release)
			drv->device_release(drv_dev);
		return -ENOMEM;
	}
	ps.cap = 1;
	rc = probe_add(&ps, name, drv_dev);
	if (rc == 0)
		*ret_dev = ps.list[0];
	free(ps.list);
	return rc;
}

RV_EXPORT void rv_device_list_free(rv_device **list)
{
	if (!list)
		return;
	for (size_t i = 0; list[i]; i++)
		rv_obj_unref(&list[i]->obj);
	free(list);
}

RV_EXPORT int rv_device_list(rv_device ***ret_list, size_t *ret_n)
{
	struct probe_state ps = {0};

	if (!ret_list)
		return rv_err(EINVAL, __func__, "ret_list is NULL");
	ps.list = calloc(1, sizeof(*ps.list));
	if (!ps.list)
		return rv_err(ENOMEM, __func__, "out of memory");
	ps.cap = 1;
	for (size_t i = 0; drivers[i]; i++) {
		ps.drv = drivers[i];
		/* A driver that fails to probe (no kernel support) simply has no devices. */
		if (drivers[i]->probe(probe_add, &ps) < 0 && ps.rc == 0)
			rv_log(RV_LOG_INFO, "driver %s found no devices: %s", drivers[i]->name,
			       rv_error_last());
		if (ps.rc < 0) {
			rv_device_list_free(ps.list);
			return rv_err(ENOMEM, __func__, "out of memory while listing devices");
		}
	}
	*ret_list = ps.list;
	if (ret_n)
		*ret_n = ps.n;
	return 0;
}

RV_EXPORT int rv_device_find(const char *name, rv_device **ret_dev)
{
	rv_device **list;
	rv_device *found = NULL;
	int rc;

	if (!name || !ret_dev)
		return rv_err(EINVAL, __func__, "%s is NULL", name ? "ret_dev" : "name");
	rc = rv_device_list(&list, NULL);
	if (rc < 0)
		return rc;
	for (size_t i = 0; list[i]; i++) {
		if (strcmp(list[i]->name, name) == 0) {
			found = rv_device_ref(list[i]);
			break;
		}
	}
	rv_device_list_free(list);
	if (!found)
		return rv_err(ENODEV, __func__, "no device is named \"%s\"", name);
	*ret_dev = found;
	return 0;
}

RV_EXPORT int rv_device_default(rv_device **ret_dev)
{
	const char *want = getenv("RVERBS_DEVICE");
	rv_device **list;
	rv_device *pick = NULL, *soft = NULL;
	int rc;

	if (!ret_dev)
		return rv_err(EINVAL, __func__, "ret_dev is NULL");
	if (want && *want) {
		rc = rv_device_find(want, ret_dev);
		if (rc < 0) {
			rv_err(ENODEV, __func__, "RVERBS_DEVICE=%s names no device", want);
			rv_err_hint("run `rverbs info` to list the devices, or unset RVERBS_DEVICE");
			return -ENODEV;
		}
		rv_log(RV_LOG_INFO, "default device %s: chosen by RVERBS_DEVICE", want);
		return 0;
	}
	rc = rv_device_list(&list, NULL);
	if (rc < 0)
		return rc;
	for (size_t i = 0; list[i] && !pick; i++) {
		struct rv_device *d = list[i];
		if (d->kind == RV_DEVICE_SOFT) {
			if (!soft)
				soft = d;
		} else if (d->drv->device_active && d->drv->device_active(d->drv_dev)) {
			pick = d;
			rv_log(RV_LOG_INFO, "default device %s: first libibverbs device with an active port",
			       d->name);
		}
	}
	if (!pick && soft) {
		pick = soft;
		rv_log(RV_LOG_INFO, "default device %s: no libibverbs device has an active port", soft->name);
	}
	if (pick)
		rv_device_ref(pick);
	rv_device_list_free(list);
	if (!pick)
		return rv_err(ENODEV, __func__, "no RDMA device with an active port, and the software device is not built in");
	*ret_dev = pick;
	return 0;
}

RV_DEFINE_HANDLE_REF_UNREF(device, RV_OBJ_DEVICE)

RV_DEFINE_HANDLE_CLOSE(device, RV_OBJ_DEVICE, "closing a context of the device")

RV_EXPORT const char *rv_device_name(const rv_device *dev)
{
	if (rv_obj_check_any(RV_COBJ(dev), RV_OBJ_DEVICE, __func__) < 0)
		return NULL;
	return dev->name;
}

RV_EXPORT int rv_device_kind_of(const rv_device *dev)
{
	int rc = rv_obj_check_any(RV_COBJ(dev), RV_OBJ_DEVICE, __func__);
	return rc < 0 ? rc : (int)dev->kind;
}
