/*
 * The conformance harness (see conf-harness.h): device enumeration, one
 * cmocka test per device x arrangement x case, the pairs and guarded buffers
 * of the running case and their cleanup after it.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf-harness.h"

#define MAX_EXTRA_BUFS 16

struct conf_run {
	const char *device;
	rv_device *dev;
	enum conf_arrangement arr;
	const struct conf_case *c;
};

/* The running case and what it opened (one case at a time). */
static const struct conf_run *cur;
static struct conf_pair pair;
static bool pair_open;
static struct conf_buf *extra[MAX_EXTRA_BUFS];
static rv_pd *extra_pd[MAX_EXTRA_BUFS];
static int n_extra;
static rv_qp *adopted_qp[16];
static rv_cq *adopted_cq[16];
static rv_mw *adopted_mw[16];
static int n_adopted_qp, n_adopted_cq, n_adopted_mw;
/* The quirk table's entries for the running case and device, and whether
 * the case met each. */
#define MAX_CASE_QUIRKS 8
static const struct conf_quirk *case_quirk[MAX_CASE_QUIRKS];
static bool case_quirk_met[MAX_CASE_QUIRKS];
static int n_case_quirks;

void conf_adopt_qp(rv_qp *qp)
{
	assert_true(n_adopted_qp < 16);
	adopted_qp[n_adopted_qp++] = qp;
}

void conf_adopt_cq(rv_cq *cq)
{
	assert_true(n_adopted_cq < 16);
	adopted_cq[n_adopted_cq++] = cq;
}

void conf_adopt_mw(rv_mw *mw)
{
	assert_true(n_adopted_mw < 16);
	adopted_mw[n_adopted_mw++] = mw;
}

const char *conf_device_name(void)
{
	return cur->device;
}

enum conf_arrangement conf_arrangement(void)
{
	return cur->arr;
}

/* ---- the quirk table (conf-quirks.c) ---- */

static void quirks_of_the_case(void)
{
	n_case_quirks = 0;
	for (const struct conf_quirk *q = conf_quirks; q->device; q++) {
		if (strcmp(q->case_name, cur->c->name) != 0 || fnmatch(q->device, cur->device, 0) != 0)
			continue;
		assert_true(n_case_quirks < MAX_CASE_QUIRKS);
		case_quirk_met[n_case_quirks] = false;
		case_quirk[n_case_quirks++] = q;
	}
}

static void quirk_met(int i)
{
	const struct conf_quirk *q = case_quirk[i];

	if (!case_quirk_met[i])
		print_message("[ QUIRK    ] %s: %s (%s; see %s)\n", cur->device, q->difference, q->reason, q->reference);
	case_quirk_met[i] = true;
}

bool conf_quirk(const char *key)
{
	for (int i = 0; i < n_case_quirks; i++) {
		if (strcmp(case_quirk[i]->key, key) == 0) {
			quirk_met(i);
			return true;
		}
	}
	return false;
}

/* The status the running device gives where the case expects status. */
static uint32_t quirk_status(uint32_t status, const struct conf_quirk **ret_q)
{
	*ret_q = NULL;
	for (int i = 0; i < n_case_quirks; i++) {
		if (strcmp(case_quirk[i]->key, "status") == 0 && case_quirk[i]->expected == status) {
			*ret_q = case_quirk[i];
			quirk_met(i);
			return case_quirk[i]->actual;
		}
	}
	return status;
}

/* After a case that passed: every entry of the table for it was met. */
static void quirks_all_met(void)
{
	for (int i = 0; i < n_case_quirks; i++)
		if (!case_quirk_met[i])
			fail_msg("the quirk table gives %s the difference \"%s\" (%s) in this case, but the case did "
				 "not meet it: remove the entry from tests/conformance/conf-quirks.c, or fix the case",
				 cur->device, case_quirk[i]->key, case_quirk[i]->difference);
}

void conf_skip(const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	print_message("[ SKIP     ] %s: %s\n", cur->device, msg);
	skip();
	abort(); /* skip() does not return */
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- buffers ---- */

uint8_t conf_pattern(uint8_t seed, size_t off)
{
	return (uint8_t)(seed * 13u + off * 31u + (off >> 8));
}

static void buf_init(struct conf_buf *b, rv_pd *pd, size_t len, uint32_t access)
{
	int rc;

	memset(b, 0, sizeof(*b));
	b->alloc = aligned_alloc(4096, len + 2 * CONF_GUARD);
	assert_non_null(b->alloc);
	b->p = b->alloc + CONF_GUARD;
	b->len = len;
	conf_buf_fill(b, 1);
	rc = rv_mr_reg(pd, b->p, len, access, &b->mr);
	if (rc == -EOPNOTSUPP)
		conf_skip("registering memory with access 0x%x: %s", access, rv_error_last());
	if (rc < 0)
		fail_msg("rv_mr_reg(access 0x%x): %d %s", access, rc, rv_error_last());
}

static void buf_fini(struct conf_buf *b)
{
	b->mr = rv_mr_unref(b->mr);
	free(b->alloc);
	b->alloc = NULL;
}

struct conf_buf *conf_buf_new(rv_pd *pd, size_t len, uint32_t access)
{
	struct conf_buf *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	assert_true(n_extra < MAX_EXTRA_BUFS);
	extra[n_extra] = b;
	extra_pd[n_extra++] = rv_pd_ref(pd);
	buf_init(b, pd, len, access);
	return b;
}

void conf_buf_fill(struct conf_buf *b, uint8_t seed)
{
	b->seed = seed;
	for (size_t i = 0; i < b->len + 2 * CONF_GUARD; i++)
		b->alloc[i] = conf_pattern(seed, i - CONF_GUARD);
}

void conf_buf_check_except(const struct conf_buf *b, const struct conf_range *r, int n)
{
	for (size_t i = 0; i < b->len + 2 * CONF_GUARD; i++) {
		size_t off = i - CONF_GUARD; /* wraps below the buffer: never in a range */
		bool allowed = false;

		for (int k = 0; k < n && i >= CONF_GUARD; k++)
			allowed |= off >= r[k].from && off < r[k].to;
		if (allowed || b->alloc[i] == conf_pattern(b->seed, off))
			continue;
		if (i < CONF_GUARD || i >= CONF_GUARD + b->len)
			fail_msg("guard byte %s the buffer changed (offset %ld)", i < CONF_GUARD ? "before" : "after",
				 (long)i - CONF_GUARD);
		fail_msg("byte %zu of the buffer changed, outside where the operation may write", off);
	}
}

void conf_buf_check(const struct conf_buf *b, size_t from, size_t to)
{
	struct conf_range r = {from, to};

	conf_buf_check_except(b, &r, 1);
}

rv_sge conf_sge(const struct conf_buf *b, size_t off, uint32_t len)
{
	rv_sge g = {.addr = (uint64_t)(uintptr_t)(b->p + off), .length = len, .lkey = rv_mr_lkey(b->mr)};
	return g;
}

uint64_t conf_addr(const struct conf_buf *b, size_t off)
{
	return (uint64_t)(uintptr_t)(b->p + off);
}

/* ---- completions ---- */

rv_wc conf_poll(rv_cq *cq)
{
	int64_t end = now_ms() + CONF_WAIT_MS;
	rv_wc wc;
	int n;

	memset(&wc, 0, sizeof(wc));
	while ((n = rv_cq_poll(cq, &wc, 1)) == 0 && now_ms() < end) {
		struct timespec ts = {0, 50000};
		nanosleep(&ts, NULL);
	}
	if (n != 1)
		fail_msg("no completion within %d ms (rv_cq_poll returned %d: %s)", CONF_WAIT_MS, n, rv_error_last());
	return wc;
}

void conf_expect(rv_cq *cq, uint64_t wr_id, uint32_t status)
{
	const struct conf_quirk *q;
	uint32_t want = quirk_status(status, &q);
	rv_wc wc = conf_poll(cq);

	if (wc.wr_id != wr_id || wc.status != want)
		fail_msg("completion wr_id %llu status %s (%u); expected wr_id %llu status %s (%u)%s%s%s",
			 (unsigned long long)wc.wr_id, rv_wc_status_str((int)wc.status), wc.status,
			 (unsigned long long)wr_id, rv_wc_status_str((int)want), want,
			 q ? " (the quirk table's, for " : "", q ? rv_wc_status_str((int)status) : "", q ? ")" : "");
}

void conf_expect_none(rv_cq *cq, int ms)
{
	int64_t end = now_ms() + ms;
	rv_wc wc;

	while (now_ms() < end) {
		int n = rv_cq_poll(cq, &wc, 1);
		if (n != 0)
			fail_msg("unexpected completion (rv_cq_poll %d): wr_id %llu status %s", n,
				 (unsigned long long)wc.wr_id, rv_wc_status_str((int)wc.status));
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

void conf_post(rv_qp *qp, const rv_send_wr *wr)
{
	int rc = rv_qp_post_send(qp, wr, 1, NULL);

	if (rc < 0)
		fail_msg("rv_qp_post_send: %d %s", rc, rv_error_last());
}

void conf_post_recv(rv_qp *qp, uint64_t wr_id, const rv_sge *sges, uint32_t n)
{
	rv_recv_wr wr = {.wr_id = wr_id, .sg_list = sges, .num_sge = n};
	int rc = rv_qp_post_recv(qp, &wr, 1, NULL);

	if (rc < 0)
		fail_msg("rv_qp_post_recv: %d %s", rc, rv_error_last());
}

/* ---- pairs ---- */

static void side_open(struct conf_side *s, rv_context *ctx, const struct conf_opts *o, uint32_t access)
{
	rv_qp_init_attr qa;
	rv_cq_attr ca = {.mask = 0};
	int rc;

	s->ctx = ctx;
	assert_int_equal(rv_pd_new(ctx, NULL, &s->pd), 0);
	if (o->channel) {
		rc = rv_comp_channel_new(ctx, NULL, &s->ch);
		if (rc == -EOPNOTSUPP)
			conf_skip("completion channels: %s", rv_error_last());
		assert_int_equal(rc, 0);
		ca.mask = RV_CQ_ATTR_CHANNEL;
		ca.channel = s->ch;
	}
	if (o->cq_wc_flags) {
		ca.mask |= RV_CQ_ATTR_WC_FLAGS;
		ca.wc_flags = o->cq_wc_flags;
	}
	rc = rv_cq_new(ctx, &ca, &s->cq);
	if (rc == -EOPNOTSUPP && o->cq_wc_flags)
		conf_skip("a CQ with wc_flags 0x%llx: %s", (unsigned long long)o->cq_wc_flags, rv_error_last());
	if (rc < 0)
		fail_msg("rv_cq_new: %d %s", rc, rv_error_last());
	memset(&qa, 0, sizeof(qa));
	qa.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_CAP | RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_SQ_SIG_ALL;
	qa.qp_type = o->qp_type ? o->qp_type : RV_QPT_RC;
	qa.sq_sig_all = o->sq_sig_selective ? 0 : 1;
	qa.send_cq = s->cq;
	qa.cap.max_send_wr = 128;
	qa.cap.max_recv_wr = 128;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.cap.max_inline_data = 64;
	rc = rv_qp_new(s->pd, &qa, &s->qp);
	if (rc == -EOPNOTSUPP)
		conf_skip("creating a %s QP: %s", qa.qp_type == RV_QPT_UC ? "UC" : qa.qp_type == RV_QPT_UD ? "UD" : "RC",
			  rv_error_last());
	if (rc < 0)
		fail_msg("rv_qp_new: %d %s", rc, rv_error_last());
	assert_int_equal(rv_qp_get_cap(s->qp, &s->cap), 0);
	buf_init(&s->buf, s->pd, CONF_BUF_LEN, access ? access : RV_ACCESS_ALL_REMOTE);
}

static rv_context *open_context(void)
{
	rv_context *ctx = NULL;
	int rc = rv_context_new(cur->dev, NULL, &ctx);

	if (rc < 0)
		fail_msg("rv_context_new(%s): %d %s", cur->device, rc, rv_error_last());
	return ctx;
}

struct conf_pair *conf_pair_open(const struct conf_opts *opts)
{
	struct conf_opts none = {0};
	const struct conf_opts *o = opts ? opts : &none;
	rv_context *ca, *cb;

	assert_false(pair_open);
	memset(&pair, 0, sizeof(pair));
	pair_open = true;
	ca = open_context();
	cb = cur->arr == CONF_ONE_CONTEXT ? rv_context_ref(ca) : open_context();
	/* Both contexts are owned by the pair before anything can skip. */
	pair.a.ctx = ca;
	pair.b.ctx = cb;
	side_open(&pair.a, ca, o, o->a_access);
	side_open(&pair.b, cb, o, o->b_access);
	if (o->b_qp_access) {
		rv_qp_attr ia;
		memset(&ia, 0, sizeof(ia));
		ia.mask = RV_QP_ACCESS_FLAGS;
		ia.qp_access_flags = o->b_qp_access;
		assert_int_equal(rv_qp_to_init(pair.b.qp, &ia), 0);
	}
	if (!o->no_connect)
		conf_connect(&pair.a, &pair.b, NULL);
	return &pair;
}

static void connect_one(struct conf_side *s, const rv_endpoint *peer, const rv_qp_attr *rts)
{
	rv_port_attr pa;
	rv_qp_attr a;
	int rc;

	if (!rts) {
		rc = rv_qp_connect(s->qp, peer);
		if (rc < 0)
			fail_msg("rv_qp_connect: %d %s", rc, rv_error_last());
		return;
	}
	/* rv_qp_connect's steps, with the caller's RTS attributes. */
	memset(&pa, 0, sizeof(pa));
	pa.mask = RV_PORT_ATTR_ALL;
	assert_int_equal(rv_context_query_port(s->ctx, peer->port_num ? peer->port_num : 1, &pa), 0);
	if (rv_qp_state_of(s->qp) == RV_QPS_RESET)
		assert_int_equal(rv_qp_to_init(s->qp, NULL), 0);
	memset(&a, 0, sizeof(a));
	a.mask = RV_QP_AV | RV_QP_DEST_QPN | RV_QP_RQ_PSN | RV_QP_PATH_MTU;
	memcpy(a.ah_attr.dgid, peer->gid, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.hop_limit = 64;
	/* The GID this QP's endpoint advertised: on a kernel RoCE device,
	 * entry 0 is usually the IPv6 link-local one. */
	rc = rv_qp_gid_index(s->qp);
	if (rc < 0)
		fail_msg("rv_qp_gid_index: %d %s", rc, rv_error_last());
	a.ah_attr.sgid_index = (uint8_t)rc;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.port_num = peer->port_num ? peer->port_num : 1;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.path_mtu = peer->mtu && peer->mtu < pa.active_mtu ? peer->mtu : pa.active_mtu;
	/* The responder's attributes belong to RTR. */
	if (rts->mask & RV_QP_MIN_RNR_TIMER) {
		a.mask |= RV_QP_MIN_RNR_TIMER;
		a.min_rnr_timer = rts->min_rnr_timer;
	}
	if (rts->mask & RV_QP_MAX_DEST_RD_ATOMIC) {
		a.mask |= RV_QP_MAX_DEST_RD_ATOMIC;
		a.max_dest_rd_atomic = rts->max_dest_rd_atomic;
	}
	rc = rv_qp_to_rtr(s->qp, &a);
	if (rc < 0)
		fail_msg("rv_qp_to_rtr: %d %s", rc, rv_error_last());
	a = *rts;
	a.mask &= ~(uint64_t)(RV_QP_MIN_RNR_TIMER | RV_QP_MAX_DEST_RD_ATOMIC);
	rc = rv_qp_to_rts(s->qp, &a);
	if (rc == -EOPNOTSUPP || rc == -EINVAL)
		conf_skip("moving a QP to RTS with attribute mask 0x%llx: %s", (unsigned long long)a.mask,
			  rv_error_last());
	if (rc < 0)
		fail_msg("rv_qp_to_rts: %d %s", rc, rv_error_last());
}

void conf_connect(struct conf_side *x, struct conf_side *y, const rv_qp_attr *rts)
{
	rv_endpoint ex, ey;

	assert_int_equal(rv_qp_endpoint(x->qp, &ex), 0);
	assert_int_equal(rv_qp_endpoint(y->qp, &ey), 0);
	connect_one(x, &ey, rts);
	connect_one(y, &ex, rts);
}

static void side_close(struct conf_side *s)
{
	s->qp = rv_qp_unref(s->qp);
	buf_fini(&s->buf);
	s->cq = rv_cq_unref(s->cq);
	s->ch = rv_comp_channel_unref(s->ch);
	s->pd = rv_pd_unref(s->pd);
}

/* After every case, passed, failed or skipped: close what it opened. The
 * contexts are closed explicitly, so work still in flight cannot keep them. */
static int run_teardown(void **state)
{
	(void)state;
	while (n_adopted_mw > 0)
		rv_mw_unref(adopted_mw[--n_adopted_mw]);
	while (n_adopted_qp > 0)
		rv_qp_unref(adopted_qp[--n_adopted_qp]);
	while (n_adopted_cq > 0)
		rv_cq_unref(adopted_cq[--n_adopted_cq]);
	for (int i = 0; i < n_extra; i++) {
		buf_fini(extra[i]);
		free(extra[i]);
		rv_pd_unref(extra_pd[i]);
	}
	n_extra = 0;
	if (pair_open) {
		rv_context *ca = pair.a.ctx, *cb = pair.b.ctx;
		side_close(&pair.a);
		side_close(&pair.b);
		if (ca)
			assert_int_equal(rv_context_close(ca), 0);
		if (cb)
			assert_int_equal(rv_context_close(cb), 0);
		rv_context_unref(ca);
		rv_context_unref(cb);
		pair_open = false;
	}
	return 0;
}

static void run_case(void **state)
{
	cur = *state;
	rv_error_clear();
	quirks_of_the_case();
	cur->c->run();
	quirks_all_met();
}

/* ---- main ---- */

static const struct conf_case *const groups[] = {conf_rc_cases, conf_errors_cases, conf_ud_cases,
						  conf_atomics_cases, conf_srq_cases, conf_events_cases,
						  conf_cq_cases, conf_mw_cases, conf_cqex_cases,
						  conf_wr_builder_cases, conf_domains_cases, conf_xrc_cases, conf_odp_cases};

static const char *const group_names[] = {"rc", "errors", "ud", "imm-atomics", "srq", "events", "cq-resize", "mw", "cq-ex",
					    "wr-builder", "domains", "xrc", "odp"};

/* Whether name is one of the comma-separated names of list. */
static bool name_listed(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && strncmp(p, name, len) == 0)
			return true;
		p += n + (end != NULL);
	}
	return false;
}

/* Every entry of the quirk table names a case that exists (a misspelt one
 * would never apply). */
static bool quirk_table_names_cases(void)
{
	bool ok = true;

	for (const struct conf_quirk *q = conf_quirks; q->device; q++) {
		bool found = false;

		for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]) && !found; g++)
			for (const struct conf_case *c = groups[g]; c->name && !found; c++)
				found = strcmp(c->name, q->case_name) == 0;
		if (!found) {
			fprintf(stderr, "conformance: the quirk table names no case \"%s\"\n", q->case_name);
			ok = false;
		}
	}
	return ok;
}

/* RVERBS_CONF_DEVICES=name[,name...] runs the cases on those devices only (a
 * name that matches no device fails the run: it would test nothing);
 * RVERBS_CONF_CASES=text runs only the cases whose name contains text. */
int main(void)
{
	rv_device **list = NULL;
	size_t n_dev = 0, n_tests = 0, cap = 0, n_run_dev = 0;
	const char *only, *cases;
	struct CMUnitTest *tests = NULL;
	struct conf_run *runs;
	int rc;

	if (!quirk_table_names_cases())
		return 1;
	cases = getenv("RVERBS_CONF_CASES");
	rc = rv_device_list(&list, &n_dev);
	if (rc < 0 || n_dev == 0) {
		fprintf(stderr, "conformance: no rverbs device (%d: %s)\n", rc, rv_error_last());
		return 77;
	}
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (const struct conf_case *c = groups[g]; c->name; c++)
			cap++;
	cap *= n_dev * 2;
	tests = calloc(cap, sizeof(*tests));
	runs = calloc(cap, sizeof(*runs));
	assert_non_null(tests);
	assert_non_null(runs);
	only = getenv("RVERBS_CONF_DEVICES");
	for (size_t d = 0; d < n_dev; d++) {
		if (only && *only && !name_listed(only, rv_device_name(list[d])))
			continue;
		n_run_dev++;
		for (int arr = 0; arr < 2; arr++) {
			for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
				for (const struct conf_case *c = groups[g]; c->name; c++) {
					struct conf_run *r = &runs[n_tests];

					if (cases && *cases && !strstr(c->name, cases))
						continue;
					char name[256];

					r->device = rv_device_name(list[d]);
					r->dev = list[d];
					r->arr = arr;
					r->c = c;
					snprintf(name, sizeof(name), "%s %s: %s: %s", r->device,
						 arr == CONF_ONE_CONTEXT ? "one-context" : "two-contexts", group_names[g],
						 c->name);
					tests[n_tests].name = strdup(name);
					tests[n_tests].test_func = run_case;
					tests[n_tests].teardown_func = run_teardown;
					tests[n_tests].initial_state = r;
					n_tests++;
				}
			}
		}
	}
	if (n_tests == 0 && n_run_dev > 0) {
		fprintf(stderr, "conformance: RVERBS_CONF_CASES=%s names no case\n", cases);
		return 1;
	}
	if (n_run_dev == 0) {
		fprintf(stderr, "conformance: RVERBS_CONF_DEVICES=%s names no device present\n", only);
		return 1;
	}
	rc = _cmocka_run_group_tests("conformance", tests, n_tests, NULL, NULL);
	for (size_t i = 0; i < n_tests; i++)
		free((char *)tests[i].name);
	free(tests);
	free(runs);
	rv_device_list_free(list);
	return rc;
}

/* An address handle on from's PD for to's port. */
rv_ah *conf_ah_to(struct conf_side *from, struct conf_side *to)
{
	rv_endpoint ep;
	rv_ah_attr a;
	rv_ah *ah = NULL;
	int rc;

	assert_int_equal(rv_qp_endpoint(to->qp, &ep), 0);
	memset(&a, 0, sizeof(a));
	memcpy(a.dgid, ep.gid, 16);
	a.is_global = 1;
	a.dlid = ep.lid;
	a.port_num = ep.port_num ? ep.port_num : 1;
	/* From the GID the sender's endpoint advertises (entry 0 of a kernel
	 * RoCE device is usually IPv6 link-local, which reaches no IPv4 GID). */
	rc = rv_qp_gid_index(from->qp);
	if (rc < 0)
		fail_msg("rv_qp_gid_index: %d %s", rc, rv_error_last());
	a.sgid_index = (uint8_t)rc;
	rc = rv_ah_new(from->pd, &a, &ah);
	if (rc == -EOPNOTSUPP)
		conf_skip("address handles: %s", rv_error_last());
	if (rc < 0)
		fail_msg("rv_ah_new: %d %s", rc, rv_error_last());
	return ah;
}

bool conf_device_stamps(void)
{
	rv_context *ctx = open_context();
	rv_device_attr da;
	rv_cq *cq = NULL;
	bool stamps;

	memset(&da, 0, sizeof(da));
	da.mask = RV_DEVICE_ATTR_ALL;
	assert_int_equal(rv_context_query_device(ctx, &da), 0);
	stamps = da.completion_timestamp_mask != 0;
	if (!stamps) {
		int rc = rv_cq_new(ctx, &(rv_cq_attr){.mask = RV_CQ_ATTR_WC_FLAGS, .wc_flags = RV_CQ_WC_TIMESTAMP},
				   &cq);
		rv_cq_unref(cq);
		assert_int_equal(rc, -EOPNOTSUPP);
	}
	rv_context_unref(ctx);
	return stamps;
}
