/*
 * Device contexts of libibverbs devices: open, close, and the device, port,
 * GID (ibv_query_gid_ex, rdma-core >= 32, for the type) and P_Key queries.
 *
 * Owns: the struct ibv_context behind each rv_context (stored as drv_ctx).
 * Never touches the ownership graph; the facade closes every dependent
 * before context_close().
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "ibv-driver.h"
#include "translate.h"

int rv_ibv_context_open(struct rv_context *ctx, const rv_context_attr *attr)
{
	struct rv_ibv_device *d = ctx->dev->drv_dev;
	struct ibv_context *c;
	char ebuf[128];
	int err;

	/* attr->listen_addr only concerns the software device. */
	(void)attr;
	errno = 0;
	c = ibv_open_device(d->dev);
	if (c) {
		ctx->drv_ctx = c;
		return 0;
	}
	err = errno ? errno : ENODEV;
	rv_err(err, "rv_context_new", "ibv_open_device(%s) failed: %s", ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	switch (err) {
	case EACCES:
	case EPERM:
		rv_err_hint("no permission on the device's /dev/infiniband/uverbs* file; add the "
			    "user to its group (often `rdma`) or fix the udev rule");
		break;
	case ENODEV:
	case ENXIO:
		rv_err_hint("the device went away (driver unloaded or device removed); list "
			    "the devices again");
		break;
	case ENOSYS:
	case EOPNOTSUPP:
		rv_err_hint("the rdma-core provider library for this device is missing or too old; "
			    "install the distribution's rdma-core / libibverbs-providers package");
		break;
	case EMFILE:
	case ENFILE:
		rv_err_hint("out of file descriptors; raise `ulimit -n`");
		break;
	default:
		break;
	}
	return -err;
}

int rv_ibv_context_close(struct rv_context *ctx)
{
	char ebuf[128];
	int rc, err;

	errno = 0;
	rc = ibv_close_device(rv_ibv_ctx(ctx));
	if (rc == 0) {
		ctx->drv_ctx = NULL;
		return 0;
	}
	err = rv_ibv_errno(rc);
	rv_err(err, "rv_context_close", "ibv_close_device(%s) failed: %s", ctx->dev->name,
	       rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	rv_err_hint("the context stays open; a resource created through the escape hatch "
		    "(rverbs/ibv.h) may still exist on it");
	return -err;
}

/* ibv_query_device_ex falls back to ibv_query_device by itself on a
 * provider without the extended query (its extended part is then zero:
 * nothing reported, which is what rv_device_attr's zeros mean too). */
int rv_ibv_query_device(struct rv_context *ctx, rv_device_attr *attr)
{
	struct ibv_device_attr_ex ax;
	char ebuf[128];
	int rc, err;

	memset(&ax, 0, sizeof(ax));
	errno = 0;
	rc = ibv_query_device_ex(rv_ibv_ctx(ctx), NULL, &ax);
	if (rc != 0) {
		err = rv_ibv_errno(rc);
		return rv_err(err, "rv_context_query_device", "ibv_query_device_ex(%s) failed: %s",
			      ctx->dev->name, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	}
	rv_ibv_device_attr_from_ibv(&ax.orig_attr, attr);
	rv_ibv_device_attr_ex_from_ibv(&ax, attr);
	return 0;
}

int rv_ibv_read_clock(struct rv_context *ctx, uint64_t *raw)
{
	struct ibv_values_ex v;
	char ebuf[128];
	int rc;

	memset(&v, 0, sizeof(v));
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	rc = ibv_query_rt_values_ex(rv_ibv_ctx(ctx), &v);
	if (rc == EOPNOTSUPP || rc == ENOSYS || (rc == 0 && !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK)))
		return rv_err(EOPNOTSUPP, "rv_context_read_clock", "device %s cannot read its clock "
			      "(ibv_query_rt_values_ex has no raw clock there)", ctx->dev->name);
	if (rc != 0)
		return rv_err(rv_ibv_errno(rc), "rv_context_read_clock", "ibv_query_rt_values_ex(%s) failed: %s",
			      ctx->dev->name, rv_ibv_strerror(rv_ibv_errno(rc), ebuf, sizeof(ebuf)));
	/* A cycle counter comes as tv_nsec alone (tv_sec 0); a clock that
	 * counts in time comes as a timespec: both read as one number. */
	*raw = (uint64_t)v.raw_clock.tv_sec * 1000000000u + (uint64_t)v.raw_clock.tv_nsec;
	return 0;
}

/* The number of physical ports, for messages; 0 if unknown. */
static unsigned port_count(struct ibv_context *c)
{
	struct ibv_device_attr dattr;

	return ibv_query_device(c, &dattr) == 0 ? dattr.phys_port_cnt : 0;
}

int rv_ibv_query_port(struct rv_context *ctx, uint8_t port_num, rv_port_attr *attr)
{
	struct ibv_port_attr pattr;
	char ebuf[128];
	int rc, err;

	memset(&pattr, 0, sizeof(pattr));
	errno = 0;
	rc = ibv_query_port(rv_ibv_ctx(ctx), port_num, &pattr);
	if (rc != 0) {
		err = rv_ibv_errno(rc);
		rv_err(err, "rv_context_query_port", "ibv_query_port(%s, port %u) failed: %s",
		       ctx->dev->name, port_num, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
		if (err == EINVAL)
			rv_err_hint("ports are numbered from 1; %s has %u", ctx->dev->name,
				    port_count(rv_ibv_ctx(ctx)));
		return -err;
	}
	rv_ibv_port_attr_from_ibv(&pattr, attr);
	return 0;
}

int rv_ibv_query_gid(struct rv_context *ctx, uint8_t port_num, int index, uint8_t gid[16])
{
	struct ibv_context *c = rv_ibv_ctx(ctx);
	struct ibv_port_attr pattr;
	union ibv_gid g;
	char ebuf[128];
	int rc, err;

	errno = 0;
	rc = ibv_query_gid(c, port_num, index, &g);
	if (rc == 0) {
		memcpy(gid, g.raw, sizeof(g.raw));
		return 0;
	}
	/* ibv_query_gid() returns -1, not always with errno: an index past the
	 * table is the usual cause, so say how long the table is. */
	err = rv_ibv_errno(rc);
	if (ibv_query_port(c, port_num, &pattr) != 0) {
		rv_err(EINVAL, "rv_context_query_gid", "ibv_query_gid(%s, port %u, index %d) failed: "
		       "no such port", ctx->dev->name, port_num, index);
		rv_err_hint("ports are numbered from 1; %s has %u", ctx->dev->name, port_count(c));
		return -EINVAL;
	}
	if (index < 0 || index >= pattr.gid_tbl_len) {
		rv_err(EINVAL, "rv_context_query_gid", "ibv_query_gid(%s, port %u, index %d) failed: "
		       "no such index", ctx->dev->name, port_num, index);
		rv_err_hint("the GID table of port %u has %d entries", port_num, pattr.gid_tbl_len);
		return -EINVAL;
	}
	rv_err(err, "rv_context_query_gid", "ibv_query_gid(%s, port %u, index %d) failed: %s",
	       ctx->dev->name, port_num, index, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
	if (pattr.link_layer == IBV_LINK_LAYER_ETHERNET)
		rv_err_hint("on RoCE a GID entry exists only for an IP address configured on the "
			    "port's network interface; this one is empty (see `rdma link` and "
			    "`ip addr`)");
	return -err;
}

_Static_assert((int)RV_GID_TYPE_IB == (int)IBV_GID_TYPE_IB &&
	       (int)RV_GID_TYPE_ROCE_V1 == (int)IBV_GID_TYPE_ROCE_V1 &&
	       (int)RV_GID_TYPE_ROCE_V2 == (int)IBV_GID_TYPE_ROCE_V2, "rv_gid_type mirrors ibv_gid_type");

int rv_ibv_query_gid_entry(struct rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *e)
{
	struct ibv_context *c = rv_ibv_ctx(ctx);
	struct ibv_gid_entry ge;
	struct ibv_port_attr pattr;
	char ebuf[128];
	int rc;

	memset(&ge, 0, sizeof(ge));
	rc = ibv_query_gid_ex(c, port_num, index, &ge, 0);
	if (rc == 0) {
		memcpy(e->gid, ge.gid.raw, sizeof(e->gid));
		e->gid_type = ge.gid_type;
		e->ndev_ifindex = ge.ndev_ifindex;
		return 0;
	}
	/* ibv_query_gid_ex() returns a positive errno; ENODATA: the entry is empty. */
	rc = rv_ibv_errno(rc);
	if (ibv_query_port(c, port_num, &pattr) != 0) {
		rv_err(EINVAL, "rv_context_query_gid_entry", "ibv_query_gid_ex(%s, port %u, index %u) "
		       "failed: no such port", ctx->dev->name, port_num, index);
		rv_err_hint("ports are numbered from 1; %s has %u", ctx->dev->name, port_count(c));
		return -EINVAL;
	}
	if (index >= (uint32_t)pattr.gid_tbl_len) {
		rv_err(EINVAL, "rv_context_query_gid_entry", "ibv_query_gid_ex(%s, port %u, index %u) "
		       "failed: no such index", ctx->dev->name, port_num, index);
		rv_err_hint("the GID table of port %u has %d entries", port_num, pattr.gid_tbl_len);
		return -EINVAL;
	}
	if (rc == ENODATA) {
		rv_err(EINVAL, "rv_context_query_gid_entry", "GID %u of %s port %u is empty", index,
		       ctx->dev->name, port_num);
		rv_err_hint("on RoCE a GID entry exists only for an IP address configured on the "
			    "port's network interface (see `rdma link` and `ip addr`)");
		return -EINVAL;
	}
	rv_err(rc, "rv_context_query_gid_entry", "ibv_query_gid_ex(%s, port %u, index %u) failed: %s",
	       ctx->dev->name, port_num, index, rv_ibv_strerror(rc, ebuf, sizeof(ebuf)));
	if (rc == EOPNOTSUPP || rc == ENOSYS)
		rv_err_hint("the kernel or rdma-core is too old for GID types; "
			    "rv_context_query_gid() still reads the GID");
	return -rc;
}

int rv_ibv_query_pkey(struct rv_context *ctx, uint8_t port_num, uint16_t index, uint16_t *pkey)
{
	struct ibv_context *c = rv_ibv_ctx(ctx);
	struct ibv_port_attr pattr;
	__be16 p = 0;
	char ebuf[128];
	int rc, err;

	errno = 0;
	rc = ibv_query_pkey(c, port_num, index, &p);
	if (rc == 0) {
		*pkey = be16toh(p); /* libibverbs gives it in network order */
		return 0;
	}
	err = rv_ibv_errno(rc);
	if (ibv_query_port(c, port_num, &pattr) != 0) {
		rv_err(EINVAL, "rv_context_query_pkey", "ibv_query_pkey(%s, port %u, index %u) failed: "
		       "no such port", ctx->dev->name, port_num, index);
		rv_err_hint("ports are numbered from 1; %s has %u", ctx->dev->name, port_count(c));
		return -EINVAL;
	}
	if (index >= pattr.pkey_tbl_len) {
		rv_err(EINVAL, "rv_context_query_pkey", "ibv_query_pkey(%s, port %u, index %u) failed: "
		       "no such index", ctx->dev->name, port_num, index);
		rv_err_hint("the P_Key table of port %u has %u entries", port_num, pattr.pkey_tbl_len);
		return -EINVAL;
	}
	return rv_err(err, "rv_context_query_pkey", "ibv_query_pkey(%s, port %u, index %u) failed: %s",
		      ctx->dev->name, port_num, index, rv_ibv_strerror(err, ebuf, sizeof(ebuf)));
}
