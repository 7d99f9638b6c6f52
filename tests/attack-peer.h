/*
 * The attacker's side of the attack suites (tests/test-attack-*.c): a target
 * (an rverbs soft0 QP waiting, passive, for a peer that never comes, with a
 * registered buffer) and a raw TCP client that speaks just enough MPA and
 * DDP/RDMAP to reach it, built from the wire format the RFCs and
 * lib/drivers/soft/README.md describe (restated here, not taken from the
 * driver), so that each attack is what an outsider can send.
 *
 * The target functions assert (cmocka); the raw client functions return
 * results, so that an attacker can run in a forked child.
 */
#ifndef RVERBS_TESTS_ATTACK_PEER_H
#define RVERBS_TESTS_ATTACK_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rverbs/rverbs.h>

#include "drivers/soft/wire/wire.h"

/* The fake peer the target waits for: its "port" is lower than any
 * listener's, so the target is the passive side. */
#define ATK_FAKE_PORT 1
#define ATK_FAKE_QPN 0x777

/* Private opcodes and the same-host extension (lib/drivers/soft/README.md). */
#define ATK_OP_SHM_CTL 0xEu
#define ATK_OP_WRITE_REF 0xFu
#define ATK_SHM_MAGIC "RSH2"
#define ATK_SHM_EXT_LEN 32u

struct atk_target {
	rv_context *ctx;
	rv_pd *pd;
	rv_cq *cq;
	rv_qp *qp;
	rv_mr *mr;
	uint8_t *buf;
	size_t len;
	rv_endpoint ep;
};

/* A soft0 context (attr may be NULL), a QP of type qp_type, an MR of len
 * bytes (remote read and write) filled with 0xab, armed (atk_target_arm). */
void atk_target_open(struct atk_target *t, const rv_context_attr *attr, rv_qp_type qp_type, size_t len);
/* To INIT, one receive WR (wr_id 77, 64 bytes of the MR's end), connected
 * to the fake peer: waits for it to connect. */
void atk_target_arm(struct atk_target *t);
/* Back to RESET and armed again, the buffer filled with 0xab. */
void atk_target_rearm(struct atk_target *t);
void atk_target_close(struct atk_target *t);
/* The target's QP state once it is want, or whatever it is after ms. */
int atk_wait_state(const struct atk_target *t, int want, int ms);

/* A TCP connection to the target's listener (-1 on failure). */
int atk_connect(const struct atk_target *t);
/* Sends the MPA request (CRC on, no markers) naming the target's QP, with
 * caps and the extra private data after rv_soft_cpd; reads the reply. 1:
 * accepted (*reply_pd, *reply_len: its private data, up to cap), 0:
 * rejected, -1: nothing sensible came back within 5 s. */
int atk_request(int fd, const struct atk_target *t, uint32_t caps, const uint8_t *extra, size_t extra_len,
		uint8_t *reply_pd, size_t cap, size_t *reply_len);
/* Encodes and sends one FPDU (with CRC): false if the peer is gone. */
bool atk_send(int fd, const struct rv_fpdu *f);
/* Reads the next FPDU into buf (f points into it): 1, 0 on timeout or EOF. */
int atk_recv(int fd, uint8_t *buf, size_t cap, struct rv_fpdu *f, int timeout_ms);
/* The peer closed the connection within ms (EOF or reset). */
bool atk_closed(int fd, int ms);
/* fork(), the child killed when the test process ends (a failed assertion
 * must not leave an attacker or a victim behind). */
pid_t atk_fork(void);
/* Open descriptors of this process (/proc/self/fd). */
int atk_open_fds(void);

#endif
