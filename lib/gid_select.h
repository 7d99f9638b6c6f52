/*
 * The GID a QP advertises and sends from (lib/gid_select.c): the rules
 * rdma_cm follows on RoCE, the checks that name a mismatch. Private.
 */
#ifndef RV_GID_SELECT_H
#define RV_GID_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rverbs-private.h"

struct sockaddr;

/* What the choice knows about the peer; every field may be NULL / 0. */
struct rv_gid_want {
	const uint8_t *peer_gid;  /* the peer's GID: only entries of its family, the route to it */
	const uint8_t *local_gid; /* the local address of the helper's control connection */
	uint32_t peer_type;       /* RV_GID_TYPE_ROCE_V1/V2 the peer's endpoint named, or 0 */
};

/* The best entry of ctx's port for w (gid_index, gid, type filled): 0, or
 * -EADDRNOTAVAIL naming the peer's family when no entry can reach it. */
int rv_gid_pick(struct rv_context *ctx, uint8_t port, const struct rv_gid_want *w, rv_gid_entry *ret,
		const char *func);
/* -EINVAL naming both when RoCE entry mine cannot talk to peer_gid (family;
 * version when peer_type is set). */
int rv_gid_check_peer(struct rv_context *ctx, const rv_gid_entry *mine, const uint8_t peer_gid[16],
		      uint32_t peer_type, const char *func);
/* -EINVAL naming the mismatch when av's source entry is empty or cannot
 * reach av's dgid on a kernel RoCE device; 0 otherwise. */
int rv_gid_check_av(struct rv_context *ctx, const rv_ah_attr *av, const char *func);
/* Choose qp's GID once (qp->sgid): kept afterwards, unless refine (the
 * helper, before anything was advertised) and the caller did not set it. */
int rv_qp_gid_choose(struct rv_qp *qp, const struct rv_gid_want *w, bool refine, const char *func);
/* qp now sends from entry index (rdma_cm chose it): 0, or -ENODATA. */
int rv_qp_gid_adopt(struct rv_qp *qp, uint32_t index);

bool rv_gid_is_v4(const uint8_t g[16]);
/* A sockaddr's address as a GID (IPv4-mapped for IPv4); false for others. */
bool rv_gid_from_sockaddr(const struct sockaddr *sa, uint8_t out[16]);
/* "10.0.2.15" or "fe80::1" */
void rv_gid_text(const uint8_t g[16], char *buf, size_t len);
const char *rv_gid_type_name(uint32_t type);

#endif
