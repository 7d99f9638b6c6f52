/*
 * Contexts: open a device, query it, and describe the ownership tree.
 *
 * A context owns the graph lock of everything created in it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "memory.h"

static _Atomic uint64_t next_context_id;

static int context_destroy(struct rv_object *obj)
{
	struct rv_context *ctx = (struct rv_context *)obj;
	return ctx->drv->context_close(ctx);
}

static void context_release(struct rv_object *obj)
{
	struct rv_context *ctx = (struct rv_context *)obj;
	pthread_mutex_destroy(&ctx->lock);
}

static const struct rv_object_class context_class = {
	.type = RV_OBJ_CONTEXT,
	.name = "context",
	.destroy = context_destroy,
	.release = context_release,
};

RV_EXPORT int rv_context_new(rv_device *dev, const rv_context_attr *attr, rv_context **ret_ctx)
{
	/* RVERBS_SOFT_LISTEN_ADDR: the default for programs that pass none
	 * (examples, tools, bindings) when they must be reached from elsewhere. */
	const char *env_listen = getenv("RVERBS_SOFT_LISTEN_ADDR");
	rv_context_attr a = {.mask = 0, .listen_addr = env_listen && *env_listen ? env_listen : "127.0.0.1"};
	pthread_mutexattr_t ma;
	struct rv_context *ctx;
	int rc;

	rc = rv_obj_new_check(RV_COBJ(dev), RV_OBJ_DEVICE, ret_ctx, "ret_ctx", attr ? attr->mask : 0,
			      RV_CONTEXT_ATTR_LISTEN_ADDR | RV_CONTEXT_ATTR_SOFT_FLAGS | RV_CONTEXT_ATTR_AUTH_SECRET,
			      "rv_context_attr", __func__);
	if (rc < 0)
		return rc;
	if (attr) {
		if ((attr->mask & RV_CONTEXT_ATTR_SOFT_FLAGS) &&
		    (attr->soft_flags & ~(uint32_t)(RV_SOFT_CRC_OPTIONAL | RV_SOFT_NO_EXT | RV_SOFT_ROCE_PORT)))
			return rv_err(EINVAL, __func__, "unknown bit 0x%x in rv_context_attr.soft_flags; known: "
				      "RV_SOFT_CRC_OPTIONAL, RV_SOFT_NO_EXT, RV_SOFT_ROCE_PORT",
				      attr->soft_flags &
					      ~(uint32_t)(RV_SOFT_CRC_OPTIONAL | RV_SOFT_NO_EXT | RV_SOFT_ROCE_PORT));
		if (attr->mask & RV_CONTEXT_ATTR_SOFT_FLAGS)
			a.soft_flags = attr->soft_flags;
		if (attr->mask & RV_CONTEXT_ATTR_AUTH_SECRET) {
			if (strcmp(dev->drv->name, "soft") != 0)
				return rv_err(EOPNOTSUPP, __func__, "connection authentication with a shared secret "
					      "(RV_CONTEXT_ATTR_AUTH_SECRET) is a feature of the software device soft0 "
					      "only; this device's connections are not authenticated, unset the bit");
			if (!attr->auth_secret || attr->auth_secret_len == 0 || attr->auth_secret_len > 4096)
				return rv_err(EINVAL, __func__, "RV_CONTEXT_ATTR_AUTH_SECRET needs auth_secret non-NULL "
					      "and auth_secret_len from 1 to 4096 (got %u); 32 random bytes are a good "
					      "secret", attr->auth_secret_len);
			a.auth_secret = attr->auth_secret;
			a.auth_secret_len = attr->auth_secret_len;
		}
		if (attr->mask & RV_CONTEXT_ATTR_LISTEN_ADDR) {
			if (!attr->listen_addr)
				return rv_err(EINVAL, __func__, "RV_CONTEXT_ATTR_LISTEN_ADDR is set but listen_addr is NULL");
			a.listen_addr = attr->listen_addr;
		}
		a.mask = attr->mask;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return rv_err(ENOMEM, __func__, "out of memory");
	rv_obj_init(&ctx->obj, &context_class, ctx);
	ctx->obj.id = atomic_fetch_add(&next_context_id, 1);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&ctx->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	ctx->dev = dev;
	ctx->drv = dev->drv;
	rv_fork_track(ctx);
	rc = rv_obj_add_dep(&ctx->obj, &dev->obj);
	if (rc < 0) {
		rv_obj_abort(&ctx->obj);
		return rv_err(-rc, __func__, "out of memory");
	}
	rv_error_clear();
	rc = ctx->drv->context_open(ctx, &a);
	if (rc < 0) {
		rc = rv_err_from_driver(rc, __func__, "opening the device");
		rv_obj_abort(&ctx->obj);
		return rc;
	}
	*ret_ctx = ctx;
	return 0;
}

RV_DEFINE_HANDLE_REF_UNREF(context, RV_OBJ_CONTEXT)

RV_DEFINE_HANDLE_CLOSE(context, RV_OBJ_CONTEXT, "closing the context or one of its resources")

RV_EXPORT rv_device *rv_context_device(const rv_context *ctx)
{
	if (rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__) < 0)
		return NULL;
	return ctx->dev;
}

/* Where rv_device_attr's RV_DEVICE_ATTR_EX and RV_DEVICE_ATTR_MCAST parts begin. */
#define DEVICE_ATTR_EX_OFF offsetof(rv_device_attr, device_cap_flags_ex)
#define DEVICE_ATTR_MCAST_OFF offsetof(rv_device_attr, max_mcast_grp)

RV_EXPORT int rv_context_query_device(rv_context *ctx, rv_device_attr *attr)
{
	rv_device_attr tmp;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!attr)
		return rv_err(EINVAL, __func__, "attr is NULL");
	if (attr->mask & ~RV_DEVICE_ATTR_ALL)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_device_attr.mask",
			      attr->mask & ~RV_DEVICE_ATTR_ALL);
	if (!(attr->mask & RV_DEVICE_ATTR_ALL))
		return 0;
	memset(&tmp, 0, sizeof(tmp));
	rv_error_clear();
	rc = ctx->drv->query_device(ctx, &tmp);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the device");
	/* Only the parts asked for: a program built before RV_DEVICE_ATTR_EX
	 * passes a struct that ends where the extended fields begin. */
	if (attr->mask & RV_DEVICE_ATTR_BASE)
		memcpy((char *)attr + sizeof(attr->mask), (const char *)&tmp + sizeof(tmp.mask),
		       DEVICE_ATTR_EX_OFF - sizeof(tmp.mask));
	if (attr->mask & RV_DEVICE_ATTR_EX)
		memcpy((char *)attr + DEVICE_ATTR_EX_OFF, (const char *)&tmp + DEVICE_ATTR_EX_OFF,
		       DEVICE_ATTR_MCAST_OFF - DEVICE_ATTR_EX_OFF);
	if (attr->mask & RV_DEVICE_ATTR_MCAST)
		memcpy((char *)attr + DEVICE_ATTR_MCAST_OFF, (const char *)&tmp + DEVICE_ATTR_MCAST_OFF,
		       sizeof(tmp) - DEVICE_ATTR_MCAST_OFF);
	return 0;
}

RV_EXPORT int rv_context_read_clock(rv_context *ctx, uint64_t *ret_raw)
{
	uint64_t raw = 0;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret_raw)
		return rv_err(EINVAL, __func__, "ret_raw is NULL");
	if (!ctx->drv->read_clock)
		return rv_err(EOPNOTSUPP, __func__, "device %s has no clock to read", ctx->dev->name);
	rv_error_clear();
	rc = ctx->drv->read_clock(ctx, &raw);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "reading the device clock");
	*ret_raw = raw;
	return 0;
}

RV_EXPORT int rv_context_query_port(rv_context *ctx, uint8_t port_num, rv_port_attr *attr)
{
	rv_port_attr tmp;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!attr)
		return rv_err(EINVAL, __func__, "attr is NULL");
	if (attr->mask & ~RV_PORT_ATTR_ALL)
		return rv_err(EINVAL, __func__, "unknown bit 0x%" PRIx64 " in rv_port_attr.mask",
			      attr->mask & ~RV_PORT_ATTR_ALL);
	if (port_num == 0)
		return rv_err(EINVAL, __func__, "port numbers start at 1");
	if (!(attr->mask & RV_PORT_ATTR_ALL))
		return 0;
	memset(&tmp, 0, sizeof(tmp));
	rv_error_clear();
	rc = ctx->drv->query_port(ctx, port_num, &tmp);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the port");
	tmp.mask = RV_PORT_ATTR_ALL;
	*attr = tmp;
	return 0;
}

RV_EXPORT int rv_context_query_gid(rv_context *ctx, uint8_t port_num, int index, uint8_t ret_gid[16])
{
	uint8_t gid[16];
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret_gid)
		return rv_err(EINVAL, __func__, "ret_gid is NULL");
	if (port_num == 0 || index < 0)
		return rv_err(EINVAL, __func__, "port %u index %d: ports start at 1, indexes at 0",
			      port_num, index);
	rv_error_clear();
	rc = ctx->drv->query_gid(ctx, port_num, index, gid);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the GID table");
	memcpy(ret_gid, gid, sizeof(gid));
	return 0;
}

RV_EXPORT int rv_context_query_gid_entry(rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *ret)
{
	rv_gid_entry e;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret)
		return rv_err(EINVAL, __func__, "ret is NULL");
	if (port_num == 0 || index > INT32_MAX)
		return rv_err(EINVAL, __func__, "port %u index %" PRIu32 ": ports start at 1, indexes at 0",
			      port_num, index);
	if (!ctx->drv->query_gid_entry)
		return rv_err(EOPNOTSUPP, __func__, "device %s cannot report GID types; use "
			      "rv_context_query_gid()", ctx->dev->name);
	memset(&e, 0, sizeof(e));
	rv_error_clear();
	rc = ctx->drv->query_gid_entry(ctx, port_num, index, &e);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the GID table");
	e.port_num = port_num;
	e.gid_index = index;
	memset(e.reserved, 0, sizeof(e.reserved));
	*ret = e;
	return 0;
}

RV_EXPORT int rv_context_query_pkey(rv_context *ctx, uint8_t port_num, uint16_t index, uint16_t *ret_pkey)
{
	uint16_t pkey = 0;
	int rc = rv_obj_check(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret_pkey)
		return rv_err(EINVAL, __func__, "ret_pkey is NULL");
	if (port_num == 0)
		return rv_err(EINVAL, __func__, "port numbers start at 1");
	if (!ctx->drv->query_pkey)
		return rv_err(EOPNOTSUPP, __func__, "device %s has no P_Key query", ctx->dev->name);
	rv_error_clear();
	rc = ctx->drv->query_pkey(ctx, port_num, index, &pkey);
	if (rc < 0)
		return rv_err_from_driver(rc, __func__, "querying the P_Key table");
	*ret_pkey = pkey;
	return 0;
}

struct dump_state {
	FILE *f;
};

/* extra_refs: references held by the dump itself, not shown. */
static void dump_one(FILE *f, const struct rv_object *obj, int depth, uint32_t extra_refs)
{
	fprintf(f, "%*s%s #%" PRIu64 " refs=%u %s", depth * 2, "", rv_obj_type_name(obj->cls->type),
		obj->id, atomic_load(&obj->refcnt) - extra_refs,
		obj->state == RV_OBJ_LIVE ? ((obj->flags & RV_OBJ_ZOMBIE_FLAG) ? "zombie(destroy failed)" : "live") : "closed");
	if (obj->state != RV_OBJ_LIVE)
		fprintf(f, " (%s)", obj->close_reason);
	fputc('\n', f);
}

static void dump_visit(struct rv_object *obj, int depth, void *arg)
{
	struct dump_state *ds = arg;
	dump_one(ds->f, obj, depth + 1, 0);
}

RV_EXPORT int rv_context_dump(rv_context *ctx, char **ret_text)
{
	struct dump_state ds;
	char *text = NULL;
	size_t len = 0;
	int rc = rv_obj_check_any(RV_COBJ(ctx), RV_OBJ_CONTEXT, __func__);

	if (rc < 0)
		return rc;
	if (!ret_text)
		return rv_err(EINVAL, __func__, "ret_text is NULL");
	ds.f = open_memstream(&text, &len);
	if (!ds.f)
		return rv_err(ENOMEM, __func__, "out of memory");
	rv_graph_lock(&ctx->obj); /* takes one reference on ctx, not shown */
	dump_one(ds.f, &ctx->obj, 0, 1);
	rv_obj_walk(&ctx->obj, dump_visit, &ds);
	rv_graph_unlock(&ctx->obj);
	if (fclose(ds.f) != 0) {
		free(text);
		return rv_err(ENOMEM, __func__, "out of memory");
	}
	*ret_text = text;
	return 0;
}

RV_EXPORT void rv_free(void *ptr)
{
	free(ptr);
}
