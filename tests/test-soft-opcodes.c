/*
 * Keeps the checklist of a new wire opcode honest (docs/hacking.md): every
 * row of soft0's RDMAP opcode table (wire.h, RV_RDMAP_OPCODE_TABLE) has a
 * fuzz seed in tests/fuzz/corpus/wire-fpdu/, named by the row's seed column
 * (that name, or that name and a dash), of which at least one decodes to the
 * row's opcode. Its receive handler is the table's handler column, which
 * iwarp/rx.c's dispatch is made from: a row without one does not compile.
 *
 * Usage: test-soft-opcodes WIRE_FPDU_CORPUS_DIR
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/soft/wire/wire.h"

static const char *corpus;

struct row {
	uint8_t opcode;
	const char *seed;
};

#define ROW(name, tagged, body, len, handler, seed) {RV_RDMAP_##name, seed},
static const struct row rows[] = {RV_RDMAP_OPCODE_TABLE(ROW)};
#undef ROW

/* The seed file's name is the row's seed name, alone or followed by '-'. */
static int names_row(const char *file, const char *seed)
{
	size_t n = strlen(seed);

	return strncmp(file, seed, n) == 0 && (file[n] == '\0' || file[n] == '-');
}

/* Whether the file decodes (CRC checked, as the generator wrote it) to opcode. */
static int decodes_to(const char *file, uint8_t opcode)
{
	static uint8_t buf[RV_FPDU_MAX];
	char path[1024];
	struct rv_fpdu f;
	size_t len;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", corpus, file);
	fp = fopen(path, "rb");
	if (!fp)
		return 0;
	len = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	return rv_wire_fpdu_decode(buf, len, &f) > 0 && f.opcode == opcode;
}

static void test_soft_opcodes__every_row_has_a_fuzz_seed_of_its_opcode(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		DIR *d = opendir(corpus);
		struct dirent *e;
		int named = 0, decoded = 0;

		assert_non_null(d);
		while ((e = readdir(d))) {
			if (!names_row(e->d_name, rows[i].seed))
				continue;
			named++;
			decoded += decodes_to(e->d_name, rows[i].opcode);
		}
		closedir(d);
		if (!decoded)
			fail_msg("opcode 0x%x: %d seed(s) named \"%s\" or \"%s-*\" in %s, none decodes to it: add one "
				 "to tests/fuzz/gen-wire-corpus.c and run scripts/fuzz-wire --gen-corpus",
				 rows[i].opcode, named, rows[i].seed, rows[i].seed, corpus);
	}
}

static void test_soft_opcodes__rows_are_distinct_opcodes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		for (size_t j = i + 1; j < sizeof(rows) / sizeof(rows[0]); j++) {
			assert_int_not_equal(rows[i].opcode, rows[j].opcode);
			assert_string_not_equal(rows[i].seed, rows[j].seed);
		}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_opcodes__every_row_has_a_fuzz_seed_of_its_opcode),
		cmocka_unit_test(test_soft_opcodes__rows_are_distinct_opcodes),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s WIRE_FPDU_CORPUS_DIR\n", argv[0]);
		return 2;
	}
	corpus = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
