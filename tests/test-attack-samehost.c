/*
 * Attack class 1 of issue 16: reading a process's memory through soft0's
 * same-host path. The target is this process (a passive QP with a remote-
 * writable MR, and a secret in memory it never registered); the attacker is
 * a forked child speaking raw MPA/DDP/RDMAP, which asks for the same-host
 * agreement and then sends a WRITE by reference naming the secret, so that
 * the target would copy it into the MR for the attacker to READ back.
 *
 * - naming the target's own pid, with each descriptor number it may hold;
 * - naming another local process (a victim that holds the target's
 *   connections, and the secret too);
 * - the agreement of older rverbs (pid, nonce and an address in the MPA
 *   private data);
 * - as uid 65534 against a root target, and from another network namespace
 *   to a target in a third one (with root);
 * - a second agreement on one connection.
 * Each fails: the target answers "refused" or terminates the connection,
 * the MR holds no byte of the secret, the target lives and its QP takes the
 * next peer. The control: an attacker that names its own process and its own
 * end of the connection is accepted, and its by-reference WRITE lands (so the
 * refusals above are the verification at work, not a path that never works).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attack-peer.h"
#include "netns-pair.h"

#define MR_LEN 65536u
#define SECRET_LEN 16384u /* by reference only from SOFT_SHM_MIN (8 KiB) up */
#define SECRET_BYTE 0x5e
#define OWN_BYTE 0x3c

/* What the child reports (its exit status). */
enum { REFUSED = 0, ACCEPTED = 1, NO_ANSWER = 2, NOT_ACCEPTED = 3, NOT_OFFERED = 4 };

static uint8_t secret[SECRET_LEN]; /* the target's, never registered */
static uint8_t own[SECRET_LEN];    /* the attacker's (child) */

static void shm_ext(uint8_t ext[ATK_SHM_EXT_LEN], const char *magic)
{
	memset(ext, 0, ATK_SHM_EXT_LEN);
	memcpy(ext, magic, 4); /* kind 0: a request; flags 0: no rings */
}

static bool send_ctl(int fd, uint8_t kind, uint8_t result, uint32_t pid, uint32_t num)
{
	uint8_t pay[12] = {kind, result, 0, 0};
	struct rv_fpdu f;

	memcpy(pay + 4, &pid, 4);
	memcpy(pay + 8, &num, 4);
	memset(&f, 0, sizeof(f));
	f.opcode = ATK_OP_SHM_CTL;
	f.last = true;
	f.payload = pay;
	f.payload_len = sizeof(pay);
	return atk_send(fd, &f);
}

/* A WRITE by reference of (src, len) to the target's MR, then a zero-length
 * SEND whose receive completion tells the target's test it was processed. */
static void send_ref_write(int fd, const struct atk_target *t, uint32_t rkey, const void *src, uint32_t len)
{
	uint8_t pay[12];
	uint64_t a = (uint64_t)(uintptr_t)src;
	struct rv_fpdu f;

	memcpy(pay, &a, 8);
	memcpy(pay + 8, &len, 4);
	memset(&f, 0, sizeof(f));
	f.opcode = ATK_OP_WRITE_REF;
	f.tagged = true;
	f.last = true;
	f.stag = rkey;
	f.to = (uint64_t)(uintptr_t)t->buf;
	f.payload = pay;
	f.payload_len = sizeof(pay);
	atk_send(fd, &f);
	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_SEND;
	f.qn = RV_DDP_QN_SEND;
	f.msn = 1;
	f.last = true;
	atk_send(fd, &f);
}

struct attack {
	const char *magic;   /* of the extension: "RSH2", or the old "RSH1" */
	bool old_fields;     /* RSH1: the old fields (pid, nonce, address) filled in */
	bool own;            /* name our own pid and descriptor (the control) */
	uint32_t pid, num;   /* otherwise, these */
	bool twice;          /* a second agreement message on the connection */
	uid_t uid;           /* run as this user (0: as we are) */
	const char *netns;   /* from this network namespace (NULL: ours) */
	uint32_t rkey;       /* the target MR's (run() fills it in: a fork child has no handles) */
};

/* The attacker, in a child: returns its report. */
static int attacker(const struct atk_target *t, const struct attack *a)
{
	uint8_t ext[ATK_SHM_EXT_LEN], reply[512], buf[1024];
	size_t reply_len = 0;
	struct rv_fpdu f;
	int fd, r, result = NO_ANSWER;
	bool offered;

	if (a->netns && netns_enter(a->netns) < 0)
		return NO_ANSWER;
	if (a->uid && (setgid(a->uid) < 0 || setuid(a->uid) < 0))
		return NO_ANSWER;
	memset(own, OWN_BYTE, sizeof(own));
	shm_ext(ext, a->magic);
	if (a->old_fields) {
		/* The old agreement: "my pid is the target's, my nonce is there". */
		uint32_t pid = (uint32_t)getppid();
		uint64_t addr = (uint64_t)(uintptr_t)secret;
		memcpy(ext + 8, &pid, 4);
		memcpy(ext + 24, &addr, 8);
	}
	fd = atk_connect(t);
	if (fd < 0)
		return NO_ANSWER;
	r = atk_request(fd, t, 0, ext, sizeof(ext), reply, sizeof(reply), &reply_len);
	if (r != 1) {
		fprintf(stderr, "attacker: the MPA request was %s\n", r == 0 ? "rejected" : "not answered");
		return r == 0 ? NOT_ACCEPTED : NO_ANSWER;
	}
	offered = reply_len >= RV_SOFT_CPD_LEN + ATK_SHM_EXT_LEN && memcmp(reply + RV_SOFT_CPD_LEN, "RSH2", 4) == 0;
	/* Ask anyway: a target that did not offer must refuse (TERMINATE). */
	send_ctl(fd, 1, 0, a->own ? (uint32_t)getpid() : a->pid, a->own ? (uint32_t)fd : a->num);
	while (offered && atk_recv(fd, buf, sizeof(buf), &f, 5000) == 1) {
		if (f.opcode == ATK_OP_SHM_CTL && f.payload_len == 12 && f.payload[0] == 2) {
			result = f.payload[1] ? ACCEPTED : REFUSED;
			break;
		}
	}
	if (result == ACCEPTED)
		send_ctl(fd, 6, 0, 0, 0); /* we read nothing of the target's */
	/* The attack proper (or the control's own bytes). */
	send_ref_write(fd, t, a->rkey, a->own ? (const void *)own : (const void *)secret, SECRET_LEN);
	if (a->twice)
		send_ctl(fd, 1, 0, (uint32_t)getpid(), (uint32_t)fd);
	/* Stay (our memory may be read) until the target is done with us. */
	atk_closed(fd, 20000);
	close(fd);
	return offered ? result : NOT_OFFERED;
}

/* The recv completion of the attacker's SEND (1), the QP in ERR (0), or
 * neither within 10 s (-1). */
static int outcome(struct atk_target *t)
{
	for (int i = 0; i < 10000; i++) {
		rv_wc wc;
		if (rv_cq_poll(t->cq, &wc, 1) == 1 && wc.wr_id == 77)
			return wc.status == RV_WC_SUCCESS ? 1 : 0;
		if (rv_qp_state_of(t->qp) == RV_QPS_ERR) {
			/* The SEND may have landed just before the QP failed
			 * (a second agreement): its completion is in the CQ
			 * ahead of the flushed ones. */
			while (rv_cq_poll(t->cq, &wc, 1) == 1)
				if (wc.wr_id == 77)
					return wc.status == RV_WC_SUCCESS ? 1 : 0;
			return 0;
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static bool holds_byte(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == v)
			return true;
	return false;
}

/* Runs one attack against t (armed); returns the child's report and leaves
 * t armed again. *landed: the attacker's SEND completed at the target. */
static int run_then(struct atk_target *t, const struct attack *attack, int *landed, void (*then)(struct atk_target *))
{
	struct attack a = *attack;
	pid_t pid;
	int st;

	a.rkey = rv_mr_rkey(t->mr);
	pid = atk_fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(attacker(t, &a));
	*landed = outcome(t);
	assert_false(holds_byte(t->buf, t->len, SECRET_BYTE));
	if (then)
		then(t); /* more checks while the attacker's connection stands */
	atk_target_rearm(t); /* closes the connection: the child ends */
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int run(struct atk_target *t, const struct attack *attack, int *landed)
{
	return run_then(t, attack, landed, NULL);
}

static struct atk_target target;

static int setup(void **state)
{
	(void)state;
	memset(secret, SECRET_BYTE, sizeof(secret));
	atk_target_open(&target, NULL, RV_QPT_RC, MR_LEN);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	atk_target_close(&target);
	return 0;
}

/* The control first: the path works for a peer that is who it says. */
static void test_attack_samehost__own_process_is_accepted(void **state)
{
	struct attack a = {.magic = "RSH2", .own = true};
	int landed;

	(void)state;
	assert_int_equal(run(&target, &a, &landed), ACCEPTED);
	assert_int_equal(landed, 1);
}

/* Pulled from the attacker's memory, exactly. */
static void own_bytes_placed(struct atk_target *t)
{
	for (size_t i = 0; i < SECRET_LEN; i++)
		assert_int_equal(t->buf[i], OWN_BYTE);
}

static void test_attack_samehost__own_bytes_land(void **state)
{
	struct attack a = {.magic = "RSH2", .own = true};
	int landed;

	(void)state;
	assert_int_equal(run_then(&target, &a, &landed, own_bytes_placed), ACCEPTED);
	assert_int_equal(landed, 1);
}

/* Naming the target itself, with every descriptor number it may hold. */
static void test_attack_samehost__target_pid_is_refused(void **state)
{
	int landed;

	(void)state;
	for (uint32_t num = 0; num < 24; num++) {
		struct attack a = {.magic = "RSH2", .pid = (uint32_t)getpid(), .num = num};
		assert_int_equal(run(&target, &a, &landed), REFUSED);
		assert_int_not_equal(landed, 1); /* the WRITE by reference was terminated */
	}
}

/* A victim: another process that holds the secret and connections of its own
 * to the target's listener. */
static void test_attack_samehost__other_process_is_refused(void **state)
{
	int ready[2], landed;
	pid_t victim;
	char c;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	victim = atk_fork();
	assert_true(victim >= 0);
	if (victim == 0) {
		for (int i = 0; i < 8; i++)
			(void)atk_connect(&target);
		(void)!write(ready[1], "r", 1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	for (uint32_t num = 0; num < 16; num++) {
		struct attack a = {.magic = "RSH2", .pid = (uint32_t)victim, .num = num};
		assert_int_equal(run(&target, &a, &landed), REFUSED);
		assert_int_not_equal(landed, 1);
	}
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	close(ready[0]);
	close(ready[1]);
}

/* The agreement of older rverbs: not understood, nothing offered, and the
 * by-reference WRITE is a TERMINATE. */
static void test_attack_samehost__old_agreement_is_ignored(void **state)
{
	struct attack a = {.magic = "RSH1", .old_fields = true, .pid = (uint32_t)getpid(), .num = 3};
	int landed;

	(void)state;
	assert_int_equal(run(&target, &a, &landed), NOT_OFFERED);
	assert_int_equal(landed, 0);
}

/* Accepted once; the second agreement message on the connection ends it. */
static void qp_ends_in_err(struct atk_target *t)
{
	assert_int_equal(atk_wait_state(t, RV_QPS_ERR, 10000), RV_QPS_ERR);
}

static void test_attack_samehost__second_agreement_is_refused(void **state)
{
	struct attack a = {.magic = "RSH2", .own = true, .twice = true};
	int landed;

	(void)state;
	assert_int_equal(run_then(&target, &a, &landed, qp_ends_in_err), ACCEPTED);
	assert_int_equal(landed, 1);
}

/* As uid 65534 against a root target: naming the target is refused. */
static void test_attack_samehost__as_nobody(void **state)
{
	int landed;

	(void)state;
	if (geteuid() != 0)
		skip();
	for (uint32_t num = 0; num < 8; num++) {
		struct attack a = {.magic = "RSH2", .pid = (uint32_t)getpid(), .num = num, .uid = 65534};
		assert_int_equal(run(&target, &a, &landed), REFUSED);
		assert_int_not_equal(landed, 1);
	}
}

/* From another network namespace as uid 65534, to a target listening on its
 * namespace's veth address: not a local peer, so nothing is offered and the
 * attempt is a TERMINATE. */
static void test_attack_samehost__from_another_namespace(void **state)
{
	struct netns_pair net;
	rv_context_attr attr = {.mask = RV_CONTEXT_ATTR_LISTEN_ADDR};
	struct atk_target t;
	int self, landed;

	(void)state;
	if (!netns_usable() || netns_pair_new(&net, "shm", 218) < 0)
		skip();
	/* The target's sockets in namespace A (this thread creates them). */
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(self >= 0);
	assert_int_equal(netns_enter(net.ns_a), 0);
	attr.listen_addr = net.ip_a;
	atk_target_open(&t, &attr, RV_QPT_RC, MR_LEN);
	assert_int_equal(setns(self, CLONE_NEWNET), 0);
	close(self);
	for (uint32_t num = 0; num < 4; num++) {
		struct attack a = {.magic = "RSH2", .pid = (uint32_t)getpid(), .num = num, .uid = 65534,
				   .netns = net.ns_b};
		assert_int_equal(run(&t, &a, &landed), NOT_OFFERED);
		assert_int_equal(landed, 0);
	}
	atk_target_close(&t);
	netns_pair_del(&net);
}

static void on_log(rv_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level <= RV_LOG_WARN || getenv("ATTACK_VERBOSE"))
		fprintf(stderr, "rverbs: %s\n", msg);
}

/* Finding 8: before the peer proved anything, the MPA reply says nothing
 * about the target process: no pid, no address, anywhere in its private
 * data (the offer of the same-host path is a flag; the identities come
 * after authentication, test-soft-auth covers the challenge). */
static bool mentions_process(const uint8_t *pd, size_t len)
{
	uint32_t pid = (uint32_t)getpid();
	uintptr_t heap = (uintptr_t)malloc(16), stack = (uintptr_t)&len;

	free((void *)heap);
	for (size_t i = 0; i + 4 <= len; i++) {
		uint32_t v32;
		memcpy(&v32, pd + i, 4);
		if (v32 == pid || __builtin_bswap32(v32) == pid)
			return true;
		if (i + 8 <= len) {
			uint64_t v;
			memcpy(&v, pd + i, 8);
			/* Within 4 GiB of the heap or the stack: a pointer. */
			if ((v > heap ? v - heap : heap - v) < (1ull << 32) ||
			    (v > stack ? v - stack : stack - v) < (1ull << 32))
				return true;
		}
	}
	return false;
}

static void test_attack_samehost__nothing_about_the_process_before_proof(void **state)
{
	uint8_t ext[ATK_SHM_EXT_LEN], reply[512];
	size_t reply_len = 0;
	int fd;

	(void)state;
	shm_ext(ext, "RSH2");
	fd = atk_connect(&target);
	assert_true(fd >= 0);
	assert_int_equal(atk_request(fd, &target, 0, ext, sizeof(ext), reply, sizeof(reply), &reply_len), 1);
	/* The offer is there (a local peer), and is only that. */
	assert_int_equal(reply_len, RV_SOFT_CPD_LEN + ATK_SHM_EXT_LEN);
	assert_memory_equal(reply + RV_SOFT_CPD_LEN, "RSH2\1\0\0\0", 8);
	for (size_t i = RV_SOFT_CPD_LEN + 8; i < reply_len; i++)
		assert_true(i == RV_SOFT_CPD_LEN + 12 || reply[i] == 0);
	/* The rest is rv_soft_cpd: the QPs' numbers, GID and port, which the
	 * endpoint gave the peer already (a pid-sized number may sit there by
	 * chance); what follows it must hold nothing of the process. */
	assert_false(mentions_process(reply + RV_SOFT_CPD_LEN, reply_len - RV_SOFT_CPD_LEN));
	close(fd);
	atk_target_rearm(&target);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attack_samehost__nothing_about_the_process_before_proof),
		cmocka_unit_test(test_attack_samehost__own_process_is_accepted),
		cmocka_unit_test(test_attack_samehost__own_bytes_land),
		cmocka_unit_test(test_attack_samehost__target_pid_is_refused),
		cmocka_unit_test(test_attack_samehost__other_process_is_refused),
		cmocka_unit_test(test_attack_samehost__old_agreement_is_ignored),
		cmocka_unit_test(test_attack_samehost__second_agreement_is_refused),
		cmocka_unit_test(test_attack_samehost__as_nobody),
		cmocka_unit_test(test_attack_samehost__from_another_namespace),
	};
	rv_device *dev;

	if (rv_device_find("soft0", &dev) < 0) {
		fprintf(stderr, "skip: soft0 is not built in\n");
		return 77;
	}
	rv_device_unref(dev);
	unsetenv("RVERBS_SOFT_SHM");
	rv_set_log_handler(on_log, NULL);
	rv_set_log_level(RV_LOG_INFO);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("attack-samehost", tests, setup, teardown);
}
