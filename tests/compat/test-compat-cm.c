/*
 * The librdmacm-compatible layer (compat/cm-*.c) through librdmacm's API:
 * the exchange's wire decoder against malformed bytes (a peer's bytes are
 * checked before they are used), bad arguments, rdma_getaddrinfo, and in
 * one process a listener and a client: connect with private data, reject
 * with private data, accept, RDMA-free ESTABLISHED on both sides, a SEND
 * over the connected QPs, disconnect with DISCONNECTED on both sides.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rdma/rsocket.h>

#include "cm.h"

/* ---- the wire ------------------------------------------------------------------ */

static void valid(struct cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = CM_MSG_REQ;
	m->qp_type = IBV_QPT_RC;
	m->qpn = 0x123456;
	m->psn = 0xabcdef;
	m->lid = 4242;
	m->gid[10] = m->gid[11] = 0xff;
	m->gid[15] = 1;
	m->private_data_len = 5;
	memcpy(m->private_data, "hello", 5);
}

static void test_cm__wire_round_trips(void **state)
{
	struct cm_msg in, out;
	uint8_t buf[CM_MSG_WIRE_LEN];

	(void)state;
	valid(&in);
	cm_msg_encode(&in, buf);
	assert_int_equal(cm_msg_decode(buf, &out), 0);
	assert_int_equal(out.type, CM_MSG_REQ);
	assert_int_equal(out.qpn, 0x123456);
	assert_int_equal(out.psn, 0xabcdef);
	assert_int_equal(out.lid, 4242);
	assert_memory_equal(out.gid, in.gid, 16);
	assert_int_equal(out.private_data_len, 5);
	assert_memory_equal(out.private_data, "hello", 5);
}

static void test_cm__wire_refuses_malformed_messages(void **state)
{
	struct cm_msg m, out;
	uint8_t buf[CM_MSG_WIRE_LEN], bad[CM_MSG_WIRE_LEN];
	/* offset, value: each makes a valid message invalid */
	static const struct {
		size_t off;
		uint8_t v;
	} cases[] = {
		{0, 'X'},        /* magic */
		{4, 2},          /* version */
		{5, 0},          /* type */
		{5, 6},          /* type */
		{6, 7},          /* QP type */
		{7, CM_PRIVATE_DATA_MAX + 1}, /* private data longer than its room */
		{12, 2},         /* SRQ flag */
		{13, 1},         /* reserved */
		{16, 1},         /* QPN over 24 bits */
		{20, 1},         /* PSN over 24 bits */
		{30, 1},         /* reserved */
		{48 + 5, 1},     /* bytes past the private data */
		{CM_MSG_WIRE_LEN - 1, 1},
	};

	(void)state;
	valid(&m);
	cm_msg_encode(&m, buf);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(bad, buf, sizeof(buf));
		bad[cases[i].off] = cases[i].v;
		assert_int_equal(cm_msg_decode(bad, &out), -EBADMSG);
	}
}

/* ---- the API ------------------------------------------------------------------- */

static void test_cm__bad_arguments_fail_with_errno(void **state)
{
	struct rdma_cm_id *id = NULL;
	struct rdma_event_channel *ch;
	struct sockaddr sa_ib = {.sa_family = AF_IB};

	(void)state;
	errno = 0;
	assert_int_equal(rdma_create_id(NULL, NULL, NULL, RDMA_PS_TCP), -1);
	assert_int_equal(errno, EINVAL);
	ch = rdma_create_event_channel();
	assert_non_null(ch);
	errno = 0;
	assert_int_equal(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x999), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	/* No InfiniBand addresses on soft0. */
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, &sa_ib), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	/* Listening before binding, connecting before resolving, accepting
	 * without a request: each is EINVAL. */
	errno = 0;
	assert_int_equal(rdma_listen(id, 1), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_connect(id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_accept(id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_disconnect(id), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_join_multicast(id, NULL, NULL), -1);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	assert_int_equal(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
}

/* No ECE on soft0: rdma_set_local_ece and rdma_get_remote_ece refuse with
 * EOPNOTSUPP, as ibv_query_ece and ibv_set_ece on its QPs do. */
static void test_cm__ece_is_refused(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	struct ibv_ece ece = {.vendor_id = 0x2c9, .options = 1};

	(void)state;
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	errno = 0;
	assert_int_equal(rdma_set_local_ece(id, &ece), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(rdma_get_remote_ece(id, &ece), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_cm__getaddrinfo_fills_source_or_destination(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP};
	struct rdma_addrinfo *res = NULL;

	(void)state;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	assert_non_null(res->ai_src_addr);
	assert_null(res->ai_dst_addr);
	assert_int_equal(ntohs(((struct sockaddr_in *)res->ai_src_addr)->sin_port), 7471);
	assert_int_equal(res->ai_qp_type, IBV_QPT_RC);
	rdma_freeaddrinfo(res);
	hints.ai_flags = 0;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	assert_non_null(res->ai_dst_addr);
	rdma_freeaddrinfo(res);
	errno = 0;
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, &hints, &res), -1);
	assert_int_equal(errno, EINVAL);

	/* No node, no service: the hints' own addresses come back (pyverbs'
	 * AddrInfo(src=...) asks so, for a multicast group as here). */
	{
		struct sockaddr_in grp = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0xe6000102)};
		struct sockaddr_in6 short6 = {.sin6_family = AF_INET6};

		hints.ai_src_addr = (struct sockaddr *)&grp;
		hints.ai_src_len = sizeof(grp);
		assert_int_equal(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
		assert_int_equal(res->ai_family, AF_INET);
		assert_int_equal(res->ai_src_len, sizeof(grp));
		assert_memory_equal(res->ai_src_addr, &grp, sizeof(grp));
		assert_null(res->ai_dst_addr);
		assert_int_equal(res->ai_port_space, RDMA_PS_TCP);
		rdma_freeaddrinfo(res);
		/* A length shorter than its family's address is refused. */
		hints.ai_src_addr = (struct sockaddr *)&short6;
		hints.ai_src_len = sizeof(struct sockaddr_in);
		errno = 0;
		assert_int_equal(rdma_getaddrinfo(NULL, NULL, &hints, &res), -1);
		assert_int_equal(errno, EINVAL);
	}
}

static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = NULL;

	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	if (ev->event != want)
		fail_msg("event %s, wanted %s (status %d)", rdma_event_str(ev->event),
			 rdma_event_str(want), ev->status);
	return ev;
}

/* One listener and clients in this process, on the loopback address. */
struct pair {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listener, *client, *child;
	struct sockaddr_in addr;
};

static void listen_and_resolve(struct pair *p)
{
	struct rdma_cm_event *ev;
	socklen_t len = sizeof(p->addr);

	p->ch = rdma_create_event_channel();
	assert_non_null(p->ch);
	assert_int_equal(rdma_create_id(p->ch, &p->listener, NULL, RDMA_PS_TCP), 0);
	p->addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(rdma_bind_addr(p->listener, (struct sockaddr *)&p->addr), 0);
	assert_int_equal(rdma_listen(p->listener, 4), 0);
	/* port 0 was bound to a free one: read it back */
	memcpy(&p->addr, rdma_get_local_addr(p->listener), sizeof(p->addr));
	(void)len;
	assert_int_not_equal(rdma_get_src_port(p->listener), 0);
	assert_int_equal(rdma_create_id(p->ch, &p->client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(p->client, NULL, (struct sockaddr *)&p->addr, 1000), 0);
	ev = next_event(p->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_ptr_equal(ev->id, p->client);
	rdma_ack_cm_event(ev);
	assert_non_null(p->client->verbs);
	assert_int_equal(rdma_resolve_route(p->client, 1000), 0);
	rdma_ack_cm_event(next_event(p->ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
}

static void test_cm__reject_carries_private_data(void **state)
{
	struct pair p;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = {.private_data = "knock", .private_data_len = 6};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {1, 1, 1, 1, 0}};
	struct ibv_pd *pd;

	(void)state;
	listen_and_resolve(&p);
	pd = ibv_alloc_pd(p.client->verbs);
	assert_non_null(pd);
	assert_int_equal(rdma_create_qp(p.client, pd, &qa), 0);
	assert_int_equal(rdma_connect(p.client, &cp), 0);
	ev = next_event(p.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->listen_id, p.listener);
	assert_int_equal(ev->param.conn.private_data_len, 6);
	assert_string_equal(ev->param.conn.private_data, "knock");
	p.child = ev->id;
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_reject(p.child, "go away", 8), 0);
	ev = next_event(p.ch, RDMA_CM_EVENT_REJECTED);
	assert_ptr_equal(ev->id, p.client);
	assert_int_equal(ev->param.conn.private_data_len, 8);
	assert_string_equal(ev->param.conn.private_data, "go away");
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(p.client);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(rdma_destroy_id(p.child), 0);
	assert_int_equal(rdma_destroy_id(p.client), 0);
	assert_int_equal(rdma_destroy_id(p.listener), 0);
	rdma_destroy_event_channel(p.ch);
}

/* A request nobody took goes with its listener: the client is rejected and
 * the channel holds no event that names the freed ids. */
static void test_cm__destroyed_listener_rejects_its_pending_requests(void **state)
{
	struct pair p;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {1, 1, 1, 1, 0}};
	struct ibv_pd *pd;
	struct pollfd pf;

	(void)state;
	listen_and_resolve(&p);
	pd = ibv_alloc_pd(p.client->verbs);
	assert_non_null(pd);
	assert_int_equal(rdma_create_qp(p.client, pd, &qa), 0);
	assert_int_equal(rdma_connect(p.client, NULL), 0);
	/* Wait until the request is queued (the channel polls readable). */
	pf = (struct pollfd){.fd = p.ch->fd, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 10000), 1);
	assert_int_equal(rdma_destroy_id(p.listener), 0);
	ev = next_event(p.ch, RDMA_CM_EVENT_REJECTED);
	assert_ptr_equal(ev->id, p.client);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(p.client);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(rdma_destroy_id(p.client), 0);
	rdma_destroy_event_channel(p.ch);
}

static void test_cm__connect_send_disconnect(void **state)
{
	struct pair p;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = {.private_data = "hi", .private_data_len = 3,
				     .responder_resources = 1, .initiator_depth = 1};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {4, 4, 1, 1, 0}};
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char buf[64] = "ping";
	int got_dis = 0, n;

	(void)state;
	listen_and_resolve(&p);
	pd = ibv_alloc_pd(p.client->verbs);
	assert_non_null(pd);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(rdma_create_qp(p.client, pd, &qa), 0);
	assert_non_null(p.client->send_cq); /* made by rdma_create_qp */
	assert_int_equal(rdma_connect(p.client, &cp), 0);
	ev = next_event(p.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	p.child = ev->id;
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_create_qp(p.child, pd, &qa), 0);
	assert_int_equal(rdma_post_recv(p.child, NULL, buf + 32, 32, mr), 0);
	cp.private_data = "welcome";
	cp.private_data_len = 8;
	assert_int_equal(rdma_accept(p.child, &cp), 0);
	/* The client's ESTABLISHED (with the reply's data), then the child's. */
	ev = next_event(p.ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(ev->id, p.client);
	assert_string_equal(ev->param.conn.private_data, "welcome");
	rdma_ack_cm_event(ev);
	ev = next_event(p.ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(ev->id, p.child);
	rdma_ack_cm_event(ev);
	/* A SEND over the QPs the exchange connected. */
	assert_int_equal(rdma_post_send(p.client, NULL, buf, 5, mr, IBV_SEND_SIGNALED), 0);
	n = rdma_get_send_comp(p.client, &wc);
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	n = rdma_get_recv_comp(p.child, &wc);
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_string_equal(buf + 32, "ping");
	/* Disconnect: both sides hear DISCONNECTED once. */
	assert_int_equal(rdma_disconnect(p.client), 0);
	for (int i = 0; i < 2; i++) {
		ev = next_event(p.ch, RDMA_CM_EVENT_DISCONNECTED);
		got_dis |= ev->id == p.client ? 1 : ev->id == p.child ? 2 : 4;
		rdma_ack_cm_event(ev);
	}
	assert_int_equal(got_dis, 3);
	assert_int_equal(rdma_disconnect(p.child), 0); /* after the peer's: no second event */
	rdma_destroy_qp(p.child);
	rdma_destroy_qp(p.client);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(rdma_destroy_id(p.child), 0);
	assert_int_equal(rdma_destroy_id(p.client), 0);
	assert_int_equal(rdma_destroy_id(p.listener), 0);
	rdma_destroy_event_channel(p.ch);
}

/* As librdmacm: an id with a device has the device's PD (rdma_create_qp
 * with none uses it), and RDMA_OPTION_ID_ACK_TIMEOUT is the QP's timeout
 * once the exchange moves it to RTS. */
static void test_cm__device_pd_and_ack_timeout(void **state)
{
	struct pair p;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {4, 4, 1, 1, 0}};
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qattr;
	uint8_t t = 21;
	uint32_t bad = 21;

	(void)state;
	listen_and_resolve(&p);
	assert_non_null(p.client->pd);
	assert_ptr_equal(p.client->pd->context, p.client->verbs);
	errno = 0;
	assert_int_equal(rdma_set_option(p.client, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &bad,
					 sizeof(bad)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_set_option(p.client, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t,
					 sizeof(t)), 0);
	assert_int_equal(rdma_create_qp(p.client, NULL, &qa), 0);
	assert_ptr_equal(p.client->qp->pd, p.client->pd);
	assert_int_equal(rdma_connect(p.client, &cp), 0);
	ev = next_event(p.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	p.child = ev->id;
	rdma_ack_cm_event(ev);
	assert_ptr_equal(p.child->pd, p.client->pd);
	assert_int_equal(rdma_create_qp(p.child, NULL, &qa), 0);
	assert_int_equal(rdma_accept(p.child, &cp), 0);
	ev = next_event(p.ch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_ack_cm_event(ev);
	ev = next_event(p.ch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_ack_cm_event(ev);
	assert_int_equal(ibv_query_qp(p.client->qp, &qattr, IBV_QP_TIMEOUT, &ia), 0);
	assert_int_equal(qattr.timeout, 21);
	assert_int_equal(ibv_query_qp(p.child->qp, &qattr, IBV_QP_TIMEOUT, &ia), 0);
	assert_int_equal(qattr.timeout, 14); /* the default where none was set */
	rdma_disconnect(p.client);
	rdma_destroy_qp(p.child);
	rdma_destroy_qp(p.client);
	assert_int_equal(rdma_destroy_id(p.child), 0);
	assert_int_equal(rdma_destroy_id(p.client), 0);
	assert_int_equal(rdma_destroy_id(p.listener), 0);
	rdma_destroy_event_channel(p.ch);
}

/* ---- real devices: the system's librdmacm, passed through (cm-real.c) ------- */

/* An IPv4 address a kernel RDMA device serves (its IPv4-mapped GID); false
 * where there is none. */
static bool real_device_address(struct sockaddr_in *out)
{
	char path[512], buf[64];
	const char *base = "/sys/class/infiniband";
	struct dirent *d;
	DIR *dir = opendir(base);
	bool found = false;

	if (!dir)
		return false;
	while (!found && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		for (int i = 0; i < 16 && !found; i++) {
			unsigned int a, b, c, e;
			FILE *f;

			snprintf(path, sizeof(path), "%s/%s/ports/1/gids/%d", base, d->d_name, i);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(buf, sizeof(buf), f) &&
			    sscanf(buf, "0000:0000:0000:0000:0000:ffff:%2x%2x:%2x%2x", &a, &b, &c, &e) == 4) {
				memset(out, 0, sizeof(*out));
				out->sin_family = AF_INET;
				out->sin_addr.s_addr = htonl(a << 24 | b << 16 | c << 8 | e);
				found = true;
			}
			fclose(f);
		}
	}
	closedir(dir);
	return found;
}

/* On a machine with a kernel RDMA device (the VM's rxe0): an id bound to its
 * address is the device's (the system's rdma_cm), one bound to loopback is
 * soft0's, and both deliver their events on one channel; a connection over
 * the real device, with QPs on its context, from request to disconnect. */
static void test_cm__real_device_ids_pass_through(void **state)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listener, *client, *child, *soft;
	struct rdma_cm_event *ev;
	struct sockaddr_in addr, lo = {.sin_family = AF_INET};
	struct rdma_conn_param cp = {.responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7, .rnr_retry_count = 7};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC, .cap = {4, 4, 1, 1, 0}};
	socklen_t len;

	(void)state;
	if (access("/sys/class/infiniband_verbs", F_OK) != 0 || !real_device_address(&addr))
		skip();
	assert_non_null(ch = rdma_create_event_channel());
	assert_int_equal(rdma_create_id(ch, &soft, NULL, RDMA_PS_TCP), 0);
	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rdma_bind_addr(soft, (struct sockaddr *)&lo), 0);
	assert_string_equal(ibv_get_device_name(soft->verbs->device), "soft0");

	assert_int_equal(rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(listener, (struct sockaddr *)&addr), 0);
	assert_non_null(listener->verbs);
	assert_string_not_equal(ibv_get_device_name(listener->verbs->device), "soft0");
	assert_int_equal(rdma_listen(listener, 4), 0);
	len = sizeof(addr);
	addr.sin_port = rdma_get_src_port(listener);
	assert_int_not_equal(addr.sin_port, 0);
	(void)len;

	assert_int_equal(rdma_create_id(ch, &client, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(client, NULL, (struct sockaddr *)&addr, 2000), 0);
	ev = next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_ptr_equal(ev->id, client);
	rdma_ack_cm_event(ev);
	assert_ptr_equal(client->verbs, listener->verbs); /* librdmacm's one context per device */
	assert_int_equal(rdma_resolve_route(client, 2000), 0);
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	assert_int_equal(rdma_create_qp(client, NULL, &qa), 0);
	assert_non_null(client->qp);
	assert_ptr_equal(client->qp->context, client->verbs);
	assert_int_equal(rdma_connect(client, &cp), 0);
	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->listen_id, listener);
	child = ev->id;
	assert_ptr_equal(child->channel, ch);
	rdma_ack_cm_event(ev);
	assert_ptr_equal(child->verbs, listener->verbs);
	assert_int_equal(rdma_create_qp(child, NULL, &qa), 0);
	assert_int_equal(rdma_accept(child, &cp), 0);
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ESTABLISHED));
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ESTABLISHED));
	/* IB CM: the passive side hears the DREQ; the active side hears
	 * DISCONNECTED once the passive side answers with its own disconnect. */
	assert_int_equal(rdma_disconnect(client), 0);
	ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_ptr_equal(ev->id, child);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_disconnect(child), 0);
	ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_ptr_equal(ev->id, client);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(child);
	rdma_destroy_qp(client);
	assert_int_equal(rdma_destroy_id(child), 0);
	assert_int_equal(rdma_destroy_id(client), 0);
	assert_int_equal(rdma_destroy_id(listener), 0);
	assert_int_equal(rdma_destroy_id(soft), 0);
	rdma_destroy_event_channel(ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cm__wire_round_trips),
		cmocka_unit_test(test_cm__wire_refuses_malformed_messages),
		cmocka_unit_test(test_cm__bad_arguments_fail_with_errno),
		cmocka_unit_test(test_cm__ece_is_refused),
		cmocka_unit_test(test_cm__getaddrinfo_fills_source_or_destination),
		cmocka_unit_test(test_cm__reject_carries_private_data),
		cmocka_unit_test(test_cm__destroyed_listener_rejects_its_pending_requests),
		cmocka_unit_test(test_cm__connect_send_disconnect),
		cmocka_unit_test(test_cm__device_pd_and_ack_timeout),
		cmocka_unit_test(test_cm__real_device_ids_pass_through),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
