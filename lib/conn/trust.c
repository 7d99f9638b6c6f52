/*
 * Whom the connection helper trusts (docs/connection-helper.md, "Trust"):
 *
 * - the shared secret of the context (rv_context_attr.auth_secret,
 *   RVERBS_SOFT_SECRET_FILE) covers the TCP exchange: a challenge-response
 *   with a nonce from each side, then a MAC over each HELLO (REQ, REP) bound
 *   to both nonces, checked before anything in the HELLO is acted on. The key
 *   stays in the driver (rv_driver.auth_mac); this file only builds the
 *   messages the MACs cover.
 * - the peer's endpoints must name the address the exchange came from: on
 *   the software device, connecting a QP opens a TCP connection to the GID's
 *   address, so a request naming another address would make this process
 *   connect wherever the client says.
 *
 * Owns nothing; never blocks beyond the deadline it is given.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "conn/conn-private.h"
#include "driver.h"

bool rv_conn_has_secret(struct rv_context *ctx)
{
	uint8_t mac[RV_WIRE_AUTH_MAC_LEN];

	return ctx->drv->auth_mac && ctx->drv->auth_mac(ctx, "", 0, mac) == 1;
}

void rv_conn_auth_mac(struct rv_context *ctx, char role, const uint8_t nc[RV_WIRE_AUTH_NONCE_LEN],
		      const uint8_t ns[RV_WIRE_AUTH_NONCE_LEN], const uint8_t *hdr, const uint8_t *payload,
		      size_t len, uint8_t out[RV_WIRE_AUTH_MAC_LEN])
{
	/* "rverbs-conn-" role || Nc || Ns || the message's header and payload. */
	static const char label[] = "rverbs-conn-";
	uint8_t buf[sizeof(label) + 2 * RV_WIRE_AUTH_NONCE_LEN + RV_WIRE_HDR_LEN + RV_WIRE_PAYLOAD_MAX];
	size_t n = sizeof(label) - 1;

	if (len > RV_WIRE_PAYLOAD_MAX)
		len = RV_WIRE_PAYLOAD_MAX; /* never: the header decoder holds messages to it */
	memcpy(buf, label, n);
	buf[n++] = (uint8_t)role;
	memcpy(buf + n, nc, RV_WIRE_AUTH_NONCE_LEN);
	n += RV_WIRE_AUTH_NONCE_LEN;
	memcpy(buf + n, ns, RV_WIRE_AUTH_NONCE_LEN);
	n += RV_WIRE_AUTH_NONCE_LEN;
	if (hdr) {
		memcpy(buf + n, hdr, RV_WIRE_HDR_LEN);
		n += RV_WIRE_HDR_LEN;
	}
	if (len)
		memcpy(buf + n, payload, len);
	n += len;
	if (ctx->drv->auth_mac(ctx, buf, n, out) != 1)
		memset(out, 0, RV_WIRE_AUTH_MAC_LEN); /* no secret: callers check rv_conn_has_secret first */
}

bool rv_conn_mac_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;

	for (size_t i = 0; i < RV_WIRE_AUTH_MAC_LEN; i++)
		d |= (uint8_t)(a[i] ^ b[i]);
	return d == 0;
}

int rv_conn_send_auth(int fd, uint8_t step, const uint8_t *nonce, const uint8_t *mac, int64_t deadline,
		      const char *peer, const char *func)
{
	uint8_t buf[RV_WIRE_HDR_LEN + RV_WIRE_AUTH_LEN];
	struct rv_wire_auth a;

	memset(&a, 0, sizeof(a));
	a.step = step;
	if (nonce)
		memcpy(a.nonce, nonce, RV_WIRE_AUTH_NONCE_LEN);
	if (mac)
		memcpy(a.mac, mac, RV_WIRE_AUTH_MAC_LEN);
	return rv_sock_send_all(fd, buf, (size_t)rv_wire_auth_encode(&a, buf), deadline, peer, func);
}

/* ---- the peer's address --------------------------------------------------- */

static bool is_v4_mapped(const uint8_t a[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return memcmp(a, prefix, 12) == 0;
}

static bool is_loopback_or_any(const uint8_t a[16])
{
	static const uint8_t any6[16], loop6[16] = {[15] = 1};

	if (is_v4_mapped(a))
		return a[12] == 127 || (a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] == 0);
	return memcmp(a, any6, 16) == 0 || memcmp(a, loop6, 16) == 0;
}

/* An address in the GID's form: IPv4 as ::ffff:a.b.c.d. */
static bool to_gid_form(const struct sockaddr *sa, uint8_t out[16])
{
	memset(out, 0, 16);
	if (sa->sa_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

/* Whether a is this host: loopback, unspecified (which reaches this host), or
 * an address of one of its interfaces. */
static bool is_this_host(const uint8_t a[16])
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (is_loopback_or_any(a))
		return true;
	if (getifaddrs(&ifs) < 0)
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		uint8_t g[16];
		if (i->ifa_addr && to_gid_form(i->ifa_addr, g))
			found = memcmp(g, a, 16) == 0;
	}
	freeifaddrs(ifs);
	return found;
}

static void gid_str(const uint8_t g[16], char *buf, size_t len)
{
	if (is_v4_mapped(g))
		inet_ntop(AF_INET, g + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, g, buf, (socklen_t)len);
}

int rv_conn_check_own_addr(struct rv_context *ctx, int fd, const char *peer, const char *func)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint8_t pa[16], g[16];
	char gs[INET6_ADDRSTRLEN];

	if (ctx->dev->kind != RV_DEVICE_SOFT || !ctx->drv->query_gid || ctx->drv->query_gid(ctx, 1, 0, g) < 0)
		return 0;
	if (!is_loopback_or_any(g))
		return 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 || !to_gid_form((struct sockaddr *)&ss, pa) ||
	    is_this_host(pa))
		return 0;
	gid_str(g, gs, sizeof(gs));
	return rv_err(EADDRNOTAVAIL, func,
		      "the soft0 device of this side's context is on %s (its GID: the address its QPs are reached at), which %s, "
		      "on another host or network namespace, cannot reach; open the context with "
		      "rv_context_attr.listen_addr (or RVERBS_SOFT_LISTEN_ADDR) set to an address of this host the "
		      "peer can reach, or \"0.0.0.0\" for this host's routable address",
		      gs, peer);
}

int rv_conn_check_peer_addr(struct rv_context *ctx, int fd, const struct rv_wire_hello *h, const char *peer,
			    const char *func)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	uint8_t pa[16];
	int here = -1; /* whether the peer is this host: computed once, when needed */

	/* Only the software device connects to the GID's address itself (TCP);
	 * a hardware port's GID need not be the address of the control network. */
	if (ctx->dev->kind != RV_DEVICE_SOFT)
		return 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 || !to_gid_form((struct sockaddr *)&ss, pa))
		return rv_err(ENOTCONN, func, "cannot read the address of %s: %s", peer, strerror(errno));
	for (uint32_t i = 0; i < h->num_qps; i++) {
		const uint8_t *g = h->ep[i].gid;
		char gs[INET6_ADDRSTRLEN];

		if (memcmp(g, pa, 16) == 0)
			continue;
		/* The same host under another name: the peer came over loopback
		 * and names its context's own address, or the other way round. */
		if (here < 0)
			here = is_this_host(pa);
		if (here && is_this_host(g))
			continue;
		gid_str(g, gs, sizeof(gs));
		return rv_err(EACCES, func,
			      "endpoint %u names address %s, but the exchange came from %s: the connection helper "
			      "connects QPs only to the address of the peer it talks to (or to this host when the "
			      "peer is on it)%s",
			      i, gs, peer,
			      is_loopback_or_any(g) ? "; the peer's soft0 context listens on loopback only: give it "
						      "rv_context_attr.listen_addr or RVERBS_SOFT_LISTEN_ADDR"
						    : "");
	}
	return 0;
}
