/*
 * The endpoint encoding (lib/endpoint.c): round trips, the fixed big-endian
 * layout, every validation error, truncation at every length, and a seeded
 * loop of random and mutated inputs that may only ever be rejected cleanly.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rverbs/rverbs.h>

#define FIXED 70 /* the encoding without user data */

static void assert_msg_contains(const char *fragment)
{
	const char *msg = rv_error_last();

	if (!strstr(msg, fragment))
		fail_msg("rv_error_last() is \"%s\"; expected it to contain \"%s\"", msg, fragment);
}

static rv_endpoint sample(uint64_t mask, uint32_t user_len)
{
	rv_endpoint ep;

	memset(&ep, 0, sizeof(ep));
	ep.mask = mask;
	for (int i = 0; i < 16; i++)
		ep.gid[i] = (uint8_t)(0xf0 + i);
	ep.lid = 0xbeef;
	ep.port_num = 1;
	ep.mtu = RV_MTU_4096;
	ep.qpn = 0xabcdef;
	ep.psn = 0x123456;
	ep.qp_type = RV_QPT_RC;
	ep.caps = RV_EP_CAP_ATOMIC | RV_EP_CAP_IMM | 0x80000000u;
	if (mask & RV_ENDPOINT_MR) {
		ep.mr_addr = 0x0102030405060708ull;
		ep.mr_length = 0x1122334455667788ull;
		ep.mr_rkey = 0xcafebabe;
	}
	if (mask & RV_ENDPOINT_USER_DATA) {
		ep.user_data_len = user_len;
		for (uint32_t i = 0; i < user_len; i++)
			ep.user_data[i] = (uint8_t)(i * 7 + 1);
	}
	return ep;
}

static size_t pack(const rv_endpoint *ep, uint8_t *buf)
{
	size_t len = 0;

	assert_int_equal(rv_endpoint_pack(ep, buf, RV_ENDPOINT_PACKED_MAX, &len), 0);
	assert_true(len >= FIXED && len <= RV_ENDPOINT_PACKED_MAX);
	return len;
}

static void assert_same_endpoint(const rv_endpoint *a, const rv_endpoint *b)
{
	assert_int_equal(a->mask, b->mask);
	assert_memory_equal(a->gid, b->gid, 16);
	assert_int_equal(a->lid, b->lid);
	assert_int_equal(a->port_num, b->port_num);
	assert_int_equal(a->mtu, b->mtu);
	assert_int_equal(a->qpn, b->qpn);
	assert_int_equal(a->psn, b->psn);
	assert_int_equal(a->qp_type, b->qp_type);
	assert_int_equal(a->caps, b->caps);
	assert_int_equal(a->mr_addr, b->mr_addr);
	assert_int_equal(a->mr_length, b->mr_length);
	assert_int_equal(a->mr_rkey, b->mr_rkey);
	assert_int_equal(a->user_data_len, b->user_data_len);
	assert_memory_equal(a->user_data, b->user_data, a->user_data_len);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Unpack must fail with want; the output must stay as it was. */
static void expect_unpack_fails(const uint8_t *buf, size_t len, int want, const char *msg)
{
	rv_endpoint out, copy;

	memset(&out, 0xa5, sizeof(out));
	copy = out;
	assert_int_equal(rv_endpoint_unpack(buf, len, &out), want);
	assert_memory_equal(&out, &copy, sizeof(out));
	if (msg)
		assert_msg_contains(msg);
}

/* ---- round trips ---- */

static void test_endpoint__round_trip_without_optional_fields(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep = sample(0, 0), out;
	size_t len;

	(void)state;
	len = pack(&ep, buf);
	assert_int_equal(len, FIXED);
	memset(&out, 0xa5, sizeof(out));
	assert_int_equal(rv_endpoint_unpack(buf, len, &out), 0);
	assert_same_endpoint(&ep, &out);
	/* Fields the encoding does not carry come back zeroed, not as garbage. */
	for (size_t i = 0; i < sizeof(out.user_data); i++)
		assert_int_equal(out.user_data[i], 0);
}

static void test_endpoint__round_trip_with_mr_and_user_data_of_every_length(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	const uint64_t masks[] = {RV_ENDPOINT_MR, RV_ENDPOINT_USER_DATA, RV_ENDPOINT_MR | RV_ENDPOINT_USER_DATA};

	(void)state;
	for (size_t m = 0; m < 3; m++) {
		for (uint32_t ul = 0; ul <= RV_ENDPOINT_USER_DATA_MAX; ul++) {
			rv_endpoint ep = sample(masks[m], ul), out;
			size_t len = pack(&ep, buf);

			assert_int_equal(len, FIXED + ((masks[m] & RV_ENDPOINT_USER_DATA) ? ul : 0));
			assert_int_equal(rv_endpoint_unpack(buf, len, &out), 0);
			if (!(masks[m] & RV_ENDPOINT_USER_DATA))
				ep.user_data_len = 0;
			assert_same_endpoint(&ep, &out);
		}
	}
	/* The largest encoding fits RV_ENDPOINT_PACKED_MAX. */
	assert_true(FIXED + RV_ENDPOINT_USER_DATA_MAX <= RV_ENDPOINT_PACKED_MAX);
}

static void test_endpoint__round_trip_of_every_qp_type_and_mtu_and_field_limits(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	const uint32_t qpts[] = {RV_QPT_RC, RV_QPT_UC, RV_QPT_UD};

	(void)state;
	for (int t = 0; t < 3; t++) {
		for (uint8_t mtu = 0; mtu <= RV_MTU_4096; mtu++) {
			rv_endpoint ep = sample(RV_ENDPOINT_MR, 0), out;

			ep.qp_type = qpts[t];
			ep.mtu = mtu;
			ep.qpn = 0xffffff;
			ep.psn = 0;
			ep.lid = 0xffff;
			ep.port_num = 255;
			ep.mr_addr = UINT64_MAX;
			ep.mr_length = UINT64_MAX;
			ep.mr_rkey = UINT32_MAX;
			assert_int_equal(rv_endpoint_unpack(buf, pack(&ep, buf), &out), 0);
			assert_same_endpoint(&ep, &out);
		}
	}
}

static void test_endpoint__encoding_is_the_documented_big_endian_layout(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep = sample(RV_ENDPOINT_MR | RV_ENDPOINT_USER_DATA, 3);
	size_t len;

	(void)state;
	len = pack(&ep, buf);
	assert_int_equal(len, 73);
	assert_memory_equal(buf, "RVEP", 4);
	assert_int_equal(buf[4], 1);                    /* version */
	assert_int_equal(buf[5], 0);                    /* reserved */
	assert_int_equal(buf[6] << 8 | buf[7], 73);     /* total length */
	assert_memory_equal(buf + 8, "\0\0\0\3", 4);    /* mask */
	assert_memory_equal(buf + 12, ep.gid, 16);
	assert_memory_equal(buf + 28, "\xbe\xef", 2);   /* lid */
	assert_int_equal(buf[30], 1);                   /* port */
	assert_int_equal(buf[31], RV_MTU_4096);
	assert_memory_equal(buf + 32, "\0\xab\xcd\xef", 4);
	assert_memory_equal(buf + 36, "\0\x12\x34\x56", 4);
	assert_memory_equal(buf + 40, "\0\0\0\2", 4);   /* RC */
	assert_memory_equal(buf + 44, "\x80\0\0\3", 4); /* caps */
	assert_memory_equal(buf + 48, "\1\2\3\4\5\6\7\x8", 8);
	assert_memory_equal(buf + 56, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	assert_memory_equal(buf + 64, "\xca\xfe\xba\xbe", 4);
	assert_memory_equal(buf + 68, "\0\3", 2);       /* user_data_len */
	assert_memory_equal(buf + 70, "\1\x8\xf", 3);   /* user data */
}

static void test_endpoint__pack_ret_len_is_optional(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep = sample(0, 0), out;

	(void)state;
	assert_int_equal(rv_endpoint_pack(&ep, buf, sizeof(buf), NULL), 0);
	assert_int_equal(rv_endpoint_unpack(buf, FIXED, &out), 0);
}

/* ---- pack validation ---- */

static void test_endpoint__pack_rejects_bad_fields_and_writes_nothing(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX], copy[RV_ENDPOINT_PACKED_MAX];
	size_t len = 12345;
	rv_endpoint ep;

	(void)state;
	memset(buf, 0x5a, sizeof(buf));
	memcpy(copy, buf, sizeof(buf));
#define BAD(mutation, want, msg)                                                         \
	do {                                                                             \
		ep = sample(RV_ENDPOINT_MR | RV_ENDPOINT_USER_DATA, 8);                 \
		mutation;                                                                \
		assert_int_equal(rv_endpoint_pack(&ep, buf, sizeof(buf), &len), want);  \
		assert_msg_contains(msg);                                                \
		assert_memory_equal(buf, copy, sizeof(buf));                             \
		assert_int_equal(len, 12345);                                            \
	} while (0)
	BAD(ep.mask |= 4, -EINVAL, "unknown bit 0x4 in the endpoint mask");
	BAD(ep.mask |= UINT64_C(1) << 40, -EINVAL, "unknown bit 0x10000000000");
	BAD(ep.qpn = 0x1000000, -EINVAL, "qpn 0x1000000 does not fit 24 bits");
	BAD(ep.psn = 0xffffffff, -EINVAL, "psn 0xffffffff does not fit 24 bits");
	BAD(ep.mtu = 6, -EINVAL, "mtu 6 is not an rv_mtu");
	BAD(ep.qp_type = 1, -EINVAL, "qp_type 1 is not RC, UC, UD, XRC_SEND or XRC_RECV");
	BAD(ep.qp_type = 5, -EINVAL, "qp_type 5");
	BAD(ep.user_data_len = RV_ENDPOINT_USER_DATA_MAX + 1, -EINVAL, "user_data_len 65 is above 64");
	BAD(ep.user_data_len = UINT32_MAX, -EINVAL, "user_data_len 4294967295");
	BAD((ep.mask = RV_ENDPOINT_MR, ep.user_data_len = 1), -EINVAL,
	    "user_data_len is 1 but RV_ENDPOINT_USER_DATA is not set");
#undef BAD
	/* Too small a buffer: -ENOSPC at every size below the need, nothing written. */
	ep = sample(RV_ENDPOINT_USER_DATA, 10);
	for (size_t cap = 0; cap < FIXED + 10; cap++) {
		assert_int_equal(rv_endpoint_pack(&ep, buf, cap, &len), -ENOSPC);
		assert_memory_equal(buf, copy, sizeof(buf));
	}
	assert_msg_contains("the buffer has 79 bytes; the endpoint needs 80");
	assert_int_equal(rv_endpoint_pack(&ep, buf, FIXED + 10, &len), 0);
	assert_int_equal(len, FIXED + 10);
	/* NULLs. */
	assert_int_equal(rv_endpoint_pack(NULL, buf, sizeof(buf), &len), -EINVAL);
	assert_msg_contains("ep is NULL");
	assert_int_equal(rv_endpoint_pack(&ep, NULL, sizeof(buf), &len), -EINVAL);
	assert_msg_contains("buf is NULL");
}

/* ---- unpack validation ---- */

static void test_endpoint__unpack_rejects_nulls(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep = sample(0, 0);
	size_t len = pack(&ep, buf);

	(void)state;
	assert_int_equal(rv_endpoint_unpack(NULL, len, &ep), -EINVAL);
	assert_msg_contains("buf is NULL");
	assert_int_equal(rv_endpoint_unpack(buf, len, NULL), -EINVAL);
	assert_msg_contains("ret_ep is NULL");
}

static void test_endpoint__unpack_rejects_bad_magic(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep = sample(0, 0);
	size_t len = pack(&ep, buf);

	(void)state;
	for (int i = 0; i < 4; i++) {
		uint8_t b[RV_ENDPOINT_PACKED_MAX];
		memcpy(b, buf, len);
		b[i] ^= 0x20;
		expect_unpack_fails(b, len, -EBADMSG, "not an rverbs endpoint");
	}
}

static void test_endpoint__unpack_rejects_other_versions_with_eprotonosupport(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep = sample(0, 0);
	size_t len = pack(&ep, buf);

	(void)state;
	buf[4] = 0;
	expect_unpack_fails(buf, len, -EPROTONOSUPPORT, "endpoint encoding version 0");
	buf[4] = 2;
	expect_unpack_fails(buf, len, -EPROTONOSUPPORT, "version 2; this library reads version 1");
	buf[4] = 255;
	expect_unpack_fails(buf, len, -EPROTONOSUPPORT, "version 255");
	/* A future version is recognised even in a short header. */
	expect_unpack_fails(buf, 8, -EPROTONOSUPPORT, NULL);
}

static void test_endpoint__unpack_rejects_truncation_at_every_length(void **state)
{
	uint8_t buf[RV_ENDPOINT_PACKED_MAX];
	const uint64_t masks[] = {0, RV_ENDPOINT_MR, RV_ENDPOINT_USER_DATA | RV_ENDPOINT_MR};

	(void)state;
	for (int m = 0; m < 3; m++) {
		rv_endpoint ep = sample(masks[m], RV_ENDPOINT_USER_DATA_MAX);
		size_t full = pack(&ep, buf);

		for (size_t len = 0; len < full; len++) {
			/* A fresh heap copy of exactly len bytes: reading past it is caught by the sanitizers. */
			uint8_t *b = malloc(len ? len : 1);
			assert_non_null(b);
			memcpy(b, buf, len);
			expect_unpack_fails(b, len, -EBADMSG, len < 8 ? "not an rverbs endpoint" : "truncated");
			free(b);
		}
		rv_endpoint out;
		assert_int_equal(rv_endpoint_unpack(buf, full, &out), 0);
	}
}

static void test_endpoint__unpack_rejects_each_bad_field(void **state)
{
	uint8_t good[RV_ENDPOINT_PACKED_MAX], b[RV_ENDPOINT_PACKED_MAX];
	rv_endpoint ep = sample(RV_ENDPOINT_MR | RV_ENDPOINT_USER_DATA, 4);
	size_t len = pack(&ep, good);

	(void)state;
#define BAD(mutation, want, msg)                            \
	do {                                                \
		memcpy(b, good, sizeof(b));                 \
		mutation;                                   \
		expect_unpack_fails(b, len, want, msg);     \
	} while (0)
	BAD(b[5] = 1, -EBADMSG, "reserved byte is 0x01");
	BAD(put16(b + 6, FIXED - 1), -EBADMSG, "truncated");
	BAD(put16(b + 6, 0), -EBADMSG, "truncated");
	BAD(put16(b + 6, (uint16_t)(len + 1)), -EBADMSG, "truncated");
	BAD(put16(b + 6, 0xffff), -EBADMSG, "truncated");
	BAD(put16(b + 6, (uint16_t)(len - 1)), -EBADMSG, "does not match 70 + user_data_len 4");
	BAD(put32(b + 8, 7), -EBADMSG, "unknown bit 0x4 in the endpoint mask");
	BAD(put32(b + 8, 0x80000003u), -EBADMSG, "unknown bit 0x80000000");
	BAD(put32(b + 32, 0x01000000u), -EBADMSG, "qpn 0x1000000 does not fit 24 bits");
	BAD(put32(b + 36, 0xff000000u), -EBADMSG, "psn 0xff000000");
	BAD(b[31] = 6, -EBADMSG, "mtu 6 is not an rv_mtu");
	BAD(b[31] = 0xff, -EBADMSG, "mtu 255");
	BAD(put32(b + 40, 0), -EBADMSG, "qp_type 0 is not RC, UC, UD, XRC_SEND or XRC_RECV");
	BAD(put32(b + 40, 0x02000000u), -EBADMSG, "qp_type");
	BAD(put16(b + 68, 65), -EBADMSG, "user_data_len 65 is above 64");
	BAD(put16(b + 68, 5), -EBADMSG, "does not match");
	BAD(put16(b + 68, 3), -EBADMSG, "does not match");
	/* Optional fields set without their mask bit. */
	BAD(put32(b + 8, RV_ENDPOINT_USER_DATA), -EBADMSG, "RV_ENDPOINT_MR is not");
	BAD((put32(b + 8, RV_ENDPOINT_MR)), -EBADMSG, "RV_ENDPOINT_USER_DATA is not set");
#undef BAD
	/* Without the MR bit, any single non-zero byte of the MR fields is refused. */
	rv_endpoint plain = sample(RV_ENDPOINT_USER_DATA, 4);
	size_t plen = pack(&plain, good);
	for (int off = 48; off < 68; off++) {
		memcpy(b, good, plen);
		b[off] = 1;
		expect_unpack_fails(b, plen, -EBADMSG, "memory-region fields are set");
	}
}

/* ---- hostile input ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void check_outcome(const uint8_t *buf, size_t len, uint64_t it)
{
	rv_endpoint out, copy;
	uint8_t again[RV_ENDPOINT_PACKED_MAX];
	size_t n;
	int rc;

	memset(&out, 0xa5, sizeof(out));
	copy = out;
	rc = rv_endpoint_unpack(buf, len, &out);
	if (rc != 0 && rc != -EBADMSG && rc != -EPROTONOSUPPORT)
		fail_msg("iteration %" PRIu64 ": unpack returned %d", it, rc);
	if (rc != 0) {
		if (memcmp(&out, &copy, sizeof(out)) != 0)
			fail_msg("iteration %" PRIu64 ": output written on failure", it);
		return;
	}
	/* Whatever was accepted is a valid endpoint that encodes back to the same bytes. */
	if (rv_endpoint_pack(&out, again, sizeof(again), &n) != 0)
		fail_msg("iteration %" PRIu64 ": an accepted endpoint does not pack: %s", it, rv_error_last());
	if (n > len || memcmp(again, buf, n) != 0)
		fail_msg("iteration %" PRIu64 ": accepted bytes do not re-encode identically", it);
}

static void test_endpoint__random_and_mutated_input_never_crashes_and_only_fails_cleanly(void **state)
{
	const char *env = getenv("RV_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ull;
	unsigned accepted = 0;
	uint8_t valid[4][RV_ENDPOINT_PACKED_MAX];
	size_t valid_len[4];

	(void)state;
	rng_state = seed ? seed : 1;
	for (int v = 0; v < 4; v++) {
		rv_endpoint ep = sample((uint64_t)v, (uint32_t)(v * 20));
		valid_len[v] = pack(&ep, valid[v]);
	}
	for (uint64_t it = 0; it < 200000; it++) {
		uint8_t buf[RV_ENDPOINT_PACKED_MAX + 32];
		size_t len;
		uint64_t r = rng();

		if (r % 4 == 0) {
			/* Random bytes, sometimes with the right magic and version. */
			len = (size_t)(rng() % sizeof(buf));
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rng();
			if (len >= 5 && (r & 16)) {
				memcpy(buf, "RVEP", 4);
				buf[4] = 1;
			}
		} else {
			/* A valid encoding with a few random mutations. */
			int v = (int)(rng() % 4);
			unsigned flips = 1 + (unsigned)(rng() % 4);
			len = valid_len[v];
			memcpy(buf, valid[v], len);
			for (unsigned f = 0; f < flips; f++) {
				switch (rng() % 4) {
				case 0: buf[rng() % len] ^= (uint8_t)(1u << (rng() % 8)); break;
				case 1: buf[rng() % len] = (uint8_t)rng(); break;
				case 2: len = (size_t)(rng() % (len + 1)); if (!len) len = 1; break;
				default: if (len < sizeof(buf)) buf[len++] = (uint8_t)rng(); break;
				}
			}
		}
		/* Exactly len bytes on the heap, so an over-read is caught by ASan and valgrind. */
		uint8_t *copy = malloc(len ? len : 1);
		assert_non_null(copy);
		memcpy(copy, buf, len);
		check_outcome(copy, len, it);
		free(copy);
		if (rv_endpoint_unpack(buf, len, &(rv_endpoint){0}) == 0)
			accepted++;
	}
	/* The mutations are not all rejected: the loop explores valid encodings too. */
	assert_true(accepted > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endpoint__round_trip_without_optional_fields),
		cmocka_unit_test(test_endpoint__round_trip_with_mr_and_user_data_of_every_length),
		cmocka_unit_test(test_endpoint__round_trip_of_every_qp_type_and_mtu_and_field_limits),
		cmocka_unit_test(test_endpoint__encoding_is_the_documented_big_endian_layout),
		cmocka_unit_test(test_endpoint__pack_ret_len_is_optional),
		cmocka_unit_test(test_endpoint__pack_rejects_bad_fields_and_writes_nothing),
		cmocka_unit_test(test_endpoint__unpack_rejects_nulls),
		cmocka_unit_test(test_endpoint__unpack_rejects_bad_magic),
		cmocka_unit_test(test_endpoint__unpack_rejects_other_versions_with_eprotonosupport),
		cmocka_unit_test(test_endpoint__unpack_rejects_truncation_at_every_length),
		cmocka_unit_test(test_endpoint__unpack_rejects_each_bad_field),
		cmocka_unit_test(test_endpoint__random_and_mutated_input_never_crashes_and_only_fails_cleanly),
	};

	return cmocka_run_group_tests_name("core: endpoint", tests, NULL, NULL);
}
