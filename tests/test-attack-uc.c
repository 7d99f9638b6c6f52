/*
 * Attack class 9 of issue 16: searching the STag space through a UC QP. On
 * UC a WRITE with a key the target refuses is dropped without a TERMINATE
 * (as the IB spec has UC do), so without a bound a peer could try millions
 * of keys a second. soft0 drops the first SOFT_UC_BAD_KEYS - 1 (255) and
 * then ends the connection: the QP goes to the error state. Nothing of the
 * MR changes on the way, and a fresh connection works again after a reset.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attack-peer.h"

#define BAD_KEYS 256 /* SOFT_UC_BAD_KEYS */

static bool guess(int fd, const struct atk_target *t, uint32_t key)
{
	static const uint8_t pay[64] = {0xee};
	struct rv_fpdu f;

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_WRITE;
	f.tagged = true;
	f.last = true;
	f.stag = key;
	f.to = (uint64_t)(uintptr_t)t->buf;
	f.payload = pay;
	f.payload_len = sizeof(pay);
	return atk_send(fd, &f);
}

static bool unchanged(const struct atk_target *t)
{
	for (size_t i = 0; i < t->len; i++)
		if (t->buf[i] != 0xab)
			return false;
	return true;
}

/* A zero-length SEND: its receive completion says the frames before it were
 * handled (a UC receiver handles a connection's frames in order). */
static void fence(int fd, uint32_t msn)
{
	struct rv_fpdu f;

	memset(&f, 0, sizeof(f));
	f.opcode = RV_RDMAP_SEND;
	f.qn = RV_DDP_QN_SEND;
	f.msn = msn;
	f.last = true;
	assert_true(atk_send(fd, &f));
}

static void wait_recv(struct atk_target *t)
{
	rv_wc wc;
	int n = 0;

	for (int i = 0; i < 10000 && n == 0; i++) {
		struct timespec ts = {0, 1000000};
		n = rv_cq_poll(t->cq, &wc, 1);
		if (n == 0)
			nanosleep(&ts, NULL);
	}
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, RV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 77);
}

static void test_attack_uc__key_search_is_cut_off(void **state)
{
	struct atk_target t;
	uint32_t key = 0x1234567, real;
	int fd, sent = 0;

	(void)state;
	atk_target_open(&t, NULL, RV_QPT_UC, 8192);
	real = rv_mr_rkey(t.mr);
	fd = atk_connect(&t);
	assert_true(fd >= 0);
	assert_int_equal(atk_request(fd, &t, RV_SOFT_CAP_UC, NULL, 0, NULL, 0, NULL), 1);
	/* Fewer than the bound: dropped, as UC does; the QP stays up. */
	for (int i = 0; i < BAD_KEYS / 2; i++) {
		key = key * 1664525u + 1013904223u;
		if (key == real)
			key++;
		assert_true(guess(fd, &t, key));
	}
	fence(fd, 1);
	wait_recv(&t);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	assert_true(unchanged(&t));
	/* The search goes on: cut off at the bound. */
	for (sent = 0; sent < 4 * BAD_KEYS; sent++) {
		key = key * 1664525u + 1013904223u;
		if (key == real)
			key++;
		if (!guess(fd, &t, key))
			break;
	}
	assert_int_equal(atk_wait_state(&t, RV_QPS_ERR, 10000), RV_QPS_ERR);
	assert_true(atk_closed(fd, 10000));
	assert_true(unchanged(&t));
	close(fd);
	/* The target lives: the QP, reset and armed again, takes a new peer. */
	atk_target_rearm(&t);
	fd = atk_connect(&t);
	assert_true(fd >= 0);
	assert_int_equal(atk_request(fd, &t, RV_SOFT_CAP_UC, NULL, 0, NULL, 0, NULL), 1);
	fence(fd, 1);
	wait_recv(&t);
	assert_int_equal(rv_qp_state_of(t.qp), RV_QPS_RTS);
	close(fd);
	atk_target_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attack_uc__key_search_is_cut_off),
	};
	rv_device *dev;

	if (rv_device_find("soft0", &dev) < 0) {
		fprintf(stderr, "skip: soft0 is not built in\n");
		return 77;
	}
	rv_device_unref(dev);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("attack-uc", tests, NULL, NULL);
}
