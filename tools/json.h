/*
 * A tiny streaming JSON writer for the rverbs command's --json output.
 *
 * Owns: commas, nesting, string escaping and number formatting. Never
 * allocates; nesting deeper than JSON_MAX_DEPTH is a programming error and is
 * ignored. Keys are given with each value; pass NULL inside arrays.
 */
#ifndef RV_TOOLS_JSON_H
#define RV_TOOLS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);
void json_string(struct json *j, const char *key, const char *value);
void json_int(struct json *j, const char *key, int64_t value);
void json_uint(struct json *j, const char *key, uint64_t value);
/* NaN and infinities are written as null (JSON has no such numbers). */
void json_double(struct json *j, const char *key, double value);
void json_bool(struct json *j, const char *key, bool value);
void json_null(struct json *j, const char *key);
/* After the outermost value: a final newline. */
void json_finish(struct json *j);

#endif
