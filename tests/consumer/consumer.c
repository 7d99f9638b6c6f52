/*
 * A program a user of rverbs would write, built only from what an install
 * provides: the headers, the library and rverbs.pc (or, in the subproject
 * test, from dependency('rverbs')). It checks that the headers and the library
 * it runs against agree on the version, and that the escape-hatch header
 * compiles with the flags pkg-config gives.
 */
#include <stdio.h>
#include <string.h>

#include <rverbs/rverbs.h>

#if !RVERBS_CHECK_VERSION(1, 0, 0)
#error "rverbs headers older than 1.0.0"
#endif

int consumer_ibv_hatch(void);

int main(void)
{
	const char *v = rv_version();
	unsigned long n = (unsigned long)rv_version_number();
	unsigned long want = RVERBS_VERSION_MAJOR * 10000ul + RVERBS_VERSION_MINOR * 100ul +
			     RVERBS_VERSION_PATCH;

	printf("rverbs %s\n", v);
	if (strcmp(v, RVERBS_VERSION_STRING) != 0) {
		fprintf(stderr, "rv_version() is %s, the headers say %s\n", v,
			RVERBS_VERSION_STRING);
		return 1;
	}
	if (n != want) {
		fprintf(stderr, "rv_version_number() is %lu, the headers say %lu\n", n, want);
		return 1;
	}
	if (consumer_ibv_hatch() != 0) {
		fprintf(stderr, "rv_qp_ibv(NULL) did not return NULL\n");
		return 1;
	}
	return 0;
}
