/*
 * The same-host path of the software device: between two processes of one
 * host, an RDMA WRITE or SEND of SOFT_SHM_MIN bytes or more does not carry
 * its payload through TCP; the FPDU names the source memory and the target
 * pulls it with one process_vm_readv(2) straight into the registered memory
 * (rx.c), after the same checks as over TCP. TCP still carries
 * everything else (setup, SEND, READ, confirmations, TERMINATE), so ordering,
 * completion and error semantics are unchanged: a WRITE completes once the
 * peer confirmed it, i.e. after it pulled the data.
 *
 * Agreement, per connection, so that no one else ever sees a private opcode:
 * 1. both sides allow it (RVERBS_SOFT_SHM, default 1) and append an
 *    extension to the MPA private data: magic, pid, a fresh random nonce; the
 *    responder's also gives the address where it keeps the initiator's nonce;
 * 2. the initiator reads that address in the responder's process: its own
 *    nonce there, next to the two ends of this very TCP connection as the
 *    responder's kernel reports them, proves the pid is the process at the
 *    other end of this connection (not some other process the peer named, or
 *    relayed a nonce to) and that the kernel lets it read the peer's memory;
 *    it then sends
 *    SOFT_OP_SHM_CTL naming where it keeps the responder's nonce, and whether
 *    its read succeeded;
 * 3. the responder does the same read and answers with its own result.
 * A side sends WRITEs by reference only once the other said it can read its
 * memory; anything else (another host, another PID namespace, a kernel or
 * security module that refuses) leaves the connection on TCP. A peer that did
 * not agree gets a TERMINATE (unexpected opcode) for a private opcode.
 *
 * Runs under the connection's rules (conn.c, rx.c, tx.c): sc->lock and/or
 * q->lock held by the caller.
 */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "soft.h"

static const uint8_t ext_magic[4] = {'R', 'S', 'H', '1'};

/* An end of c's TCP connection as 16 address bytes (IPv4-mapped) and a port. */
static void end_of(const struct soft_conn *c, bool local, uint8_t out[18])
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	memset(out, 0, 18);
	if ((local ? getsockname(c->fd, (struct sockaddr *)&ss, &l) : getpeername(c->fd, (struct sockaddr *)&ss, &l)) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &a->sin_addr, 4);
		memcpy(out + 16, &a->sin_port, 2);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
		memcpy(out, &a->sin6_addr, 16);
		memcpy(out + 16, &a->sin6_port, 2);
	}
}

/* Keep the peer's nonce, with both ends of the connection, where it reads them. */
static void keep_proof(struct soft_conn *c, uint64_t nonce)
{
	c->shm_echo.nonce = nonce;
	end_of(c, true, c->shm_echo.local);
	end_of(c, false, c->shm_echo.peer);
}

/* Does process pid hold, at addr, our nonce and this connection seen from its end? */
static bool probe(const struct soft_conn *c, uint32_t pid, uint64_t addr)
{
	struct soft_shm_proof got, want;
	struct iovec l = {&got, sizeof(got)}, r = {(void *)(uintptr_t)addr, sizeof(got)};

	if (!pid || !addr)
		return false;
	memset(&want, 0, sizeof(want));
	want.nonce = c->shm_nonce;
	end_of(c, false, want.local); /* its local end is our peer end */
	end_of(c, true, want.peer);
	return process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(got) &&
	       memcmp(&got, &want, sizeof(got)) == 0;
}

size_t soft_shm_ext_put(struct soft_conn *c, bool reply, uint8_t *buf)
{
	uint32_t pid = (uint32_t)getpid(), kind = reply;
	uint64_t addr = reply ? (uint64_t)(uintptr_t)&c->shm_echo : 0;

	if (!c->sc->shm_enabled || (reply && !c->shm_peer))
		return 0;
	rv_random_bytes(&c->shm_nonce, sizeof(c->shm_nonce));
	memcpy(buf, ext_magic, 4);
	memcpy(buf + 4, &kind, 4);
	memcpy(buf + 8, &pid, 4);
	memset(buf + 12, 0, 4);
	buf[12] = c->sc->shm_ring ? 1 : 0; /* flags: 1 = shared-memory rings (shmring.c) */
	memcpy(buf + 16, &c->shm_nonce, 8);
	memcpy(buf + 24, &addr, 8);
	return SOFT_SHM_EXT_LEN;
}

void soft_shm_ext_got(struct soft_conn *c, bool reply, const uint8_t *pd, size_t len)
{
	const uint8_t *x = pd + RV_SOFT_CPD_LEN;
	uint32_t kind, pid;
	uint64_t nonce, addr;

	c->shm_peer = c->shm_pull = c->shm_push = false;
	if (!c->sc->shm_enabled || len < RV_SOFT_CPD_LEN + SOFT_SHM_EXT_LEN || memcmp(x, ext_magic, 4) != 0)
		return;
	memcpy(&kind, x + 4, 4);
	memcpy(&pid, x + 8, 4);
	memcpy(&nonce, x + 16, 8);
	memcpy(&addr, x + 24, 8);
	if (kind != (uint32_t)reply)
		return;
	c->shm_peer = true;
	c->shm_ring_peer = (x[12] & 1) != 0;
	c->shm_pid = pid;
	keep_proof(c, nonce); /* the peer reads it back from &c->shm_echo */
	if (reply) {
		c->shm_peer_addr = addr;
		c->shm_pull = probe(c, pid, addr);
		c->shm_send_ctl = true;
	}
}

void soft_shm_ctl_put(struct soft_conn *c, uint8_t *buf)
{
	uint64_t addr = c->active ? (uint64_t)(uintptr_t)&c->shm_echo : 0;

	buf[0] = c->active ? 1 : 2; /* 1: the initiator's step 2, 2: the responder's answer */
	buf[1] = c->shm_pull;
	buf[2] = buf[3] = 0;
	memcpy(buf + 4, &addr, 8);
}

bool soft_shm_ctl_got(struct soft_qp *q, struct soft_conn *c, const uint8_t *p, size_t len)
{
	uint64_t addr;

	if (c->shm_peer && len == SOFT_SHM_CTL_LEN && p[0] >= 3)
		return soft_shmring_ctl_got(q, c, p); /* the rings (shmring.c) */
	if (!c->shm_peer || len != SOFT_SHM_CTL_LEN || p[0] != (c->active ? 2 : 1))
		return false;
	memcpy(&addr, p + 4, 8);
	if (!c->active) {
		c->shm_pull = probe(c, c->shm_pid, addr);
		c->shm_send_ctl = true;
	}
	c->shm_push = p[1] != 0;
	rv_log(RV_LOG_INFO, "soft0: QP 0x%x: same-host path to QP 0x%x: WRITEs and SENDs of %u bytes or more from us %s, "
	       "to us %s", q->qpn, q->peer_qpn, SOFT_SHM_MIN, c->shm_push ? "by reference" : "over TCP",
	       c->shm_pull ? "by reference" : "over TCP");
	soft_shmring_start(q, c); /* both directions hold: rings for every frame */
	return true;
}
