/*
 * Conformance: on-demand paging (RV_ACCESS_ON_DEMAND, implicit ODP,
 * rv_mr_advise) as each device reports it.
 *
 * What every device must agree on: a registration with RV_ACCESS_ON_DEMAND
 * succeeds exactly where odp_general_caps has RV_ODP_SUPPORT, and the whole
 * address space (NULL, SIZE_MAX) exactly where it has
 * RV_ODP_SUPPORT_IMPLICIT; elsewhere both are refused with -EOPNOTSUPP (rxe
 * without ODP: checked, not skipped), as is advice. Where implicit ODP and
 * RC WRITE/READ on ODP memory are reported, a peer's WRITE lands in memory
 * no MR of its own names and a READ returns it, through the implicit rkey.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf-harness.h"

#define LEN 3000u

static void query(rv_context *ctx, rv_device_attr *da)
{
	memset(da, 0, sizeof(*da));
	da->mask = RV_DEVICE_ATTR_EX;
	assert_int_equal(rv_context_query_device(ctx, da), 0);
}

static void odp_registration_as_reported(void)
{
	struct conf_pair *p = conf_pair_open(&(struct conf_opts){.no_connect = true});
	uint8_t *mem = p->a.buf.p;
	rv_device_attr da;
	rv_mr *mr = NULL;
	rv_sge g;
	int rc;

	query(p->a.ctx, &da);
	rc = rv_mr_reg(p->a.pd, mem, 4096, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_ON_DEMAND, &mr);
	if (da.odp_general_caps & RV_ODP_SUPPORT) {
		assert_int_equal(rc, 0);
		g = (rv_sge){.addr = (uint64_t)(uintptr_t)mem, .length = 4096, .lkey = rv_mr_lkey(mr)};
		rc = rv_mr_advise(p->a.pd, RV_ADVISE_MR_PREFETCH_WRITE, RV_ADVISE_MR_FLAG_FLUSH, &g, 1);
		/* Advice is optional for a provider (ibv_advise_mr(3): EOPNOTSUPP). */
		if (rc != 0)
			assert_int_equal(rc, -EOPNOTSUPP);
		print_message("%s: on-demand paging; advice %s\n", conf_device_name(),
			      rc == 0 ? "taken" : "refused (EOPNOTSUPP)");
		mr = rv_mr_unref(mr);
	} else {
		assert_int_equal(rc, -EOPNOTSUPP);
		assert_null(mr);
		g = (rv_sge){.addr = (uint64_t)(uintptr_t)mem, .length = 64, .lkey = rv_mr_lkey(p->a.buf.mr)};
		assert_int_equal(rv_mr_advise(p->a.pd, RV_ADVISE_MR_PREFETCH, 0, &g, 1), -EOPNOTSUPP);
		print_message("%s: no on-demand paging: ON_DEMAND and advice refused\n", conf_device_name());
	}
	rc = rv_mr_reg(p->a.pd, NULL, RV_MR_IMPLICIT_LENGTH, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_ON_DEMAND, &mr);
	if (da.odp_general_caps & RV_ODP_SUPPORT_IMPLICIT) {
		assert_int_equal(rc, 0);
		assert_null(rv_mr_addr(mr));
		assert_true(rv_mr_length(mr) == SIZE_MAX);
		rv_mr_unref(mr);
	} else {
		assert_int_equal(rc, -EOPNOTSUPP);
	}
}

static void implicit_write_and_read(void)
{
	struct conf_pair *p = conf_pair_open(NULL);
	uint32_t need = RV_ODP_SUPPORT_WRITE | RV_ODP_SUPPORT_READ;
	uint8_t *target, *source;
	rv_device_attr da;
	rv_mr *imr = NULL;
	rv_sge g;

	query(p->b.ctx, &da);
	if (!(da.odp_general_caps & RV_ODP_SUPPORT_IMPLICIT)) {
		/* Checked, not skipped: the remote-access form is refused too. */
		assert_int_equal(rv_mr_reg(p->b.pd, NULL, RV_MR_IMPLICIT_LENGTH,
					   RV_ACCESS_ON_DEMAND | RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE |
					   RV_ACCESS_REMOTE_READ, &imr), -EOPNOTSUPP);
		assert_null(imr);
		print_message("%s: no implicit ODP (odp_general_caps 0x%llx): a remote-access implicit MR "
			      "is refused\n", conf_device_name(), (unsigned long long)da.odp_general_caps);
		return;
	}
	if ((da.odp_rc_caps & need) != need)
		conf_skip("%s has implicit ODP but not RC WRITE and READ on it (odp_rc_caps 0x%x)",
			  conf_device_name(), da.odp_rc_caps);
	assert_int_equal(rv_mr_reg(p->b.pd, NULL, RV_MR_IMPLICIT_LENGTH,
				   RV_ACCESS_ON_DEMAND | RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE |
				   RV_ACCESS_REMOTE_READ, &imr), 0);
	target = calloc(1, LEN + 2);
	source = malloc(LEN);
	assert_non_null(target);
	assert_non_null(source);
	for (uint32_t i = 0; i < LEN; i++)
		source[i] = (uint8_t)(i * 31 + 3);
	conf_buf_fill(&p->a.buf, 5);

	g = conf_sge(&p->a.buf, 0, LEN);
	assert_int_equal(rv_qp_write(p->a.qp, &g, (uint64_t)(uintptr_t)(target + 1), rv_mr_rkey(imr), 1), 0);
	conf_expect(p->a.cq, 1, RV_WC_SUCCESS);
	assert_memory_equal(target + 1, p->a.buf.p, LEN);
	assert_int_equal(target[0], 0);
	assert_int_equal(target[LEN + 1], 0);

	g = conf_sge(&p->a.buf, 0, LEN);
	assert_int_equal(rv_qp_read(p->a.qp, &g, (uint64_t)(uintptr_t)source, rv_mr_rkey(imr), 2), 0);
	conf_expect(p->a.cq, 2, RV_WC_SUCCESS);
	assert_memory_equal(p->a.buf.p, source, LEN);
	conf_buf_check(&p->a.buf, 0, LEN);

	/* Before the memory goes: the QPs close with the harness, the MR now. */
	assert_int_equal(rv_mr_close(imr), 0);
	rv_mr_unref(imr);
	free(target);
	free(source);
}

const struct conf_case conf_odp_cases[] = {
	{"odp_registration_as_reported", odp_registration_as_reported},
	{"implicit_write_and_read", implicit_write_and_read},
	CONF_END,
};
