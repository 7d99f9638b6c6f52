/*
 * `rverbs run [--] PROGRAM [ARGS...]`: runs an unmodified libibverbs or
 * librdmacm program with the compatibility layer (compat/) in front of the
 * system's libraries, so that it sees soft0 beside the real devices and
 * connects on it with rdma_cm (docs/compat.md).
 *
 * It only sets LD_LIBRARY_PATH and execs: the program's exit status is its
 * own, and a program that cannot be started exits 127 (not found) or 126, as
 * a shell says.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools.h"

static void run_usage(FILE *f)
{
	fprintf(f, "usage: rverbs run [--] PROGRAM [ARGS...]\n"
		   "  runs PROGRAM with rverbs' libibverbs.so.1 and librdmacm.so.1 first on\n"
		   "  LD_LIBRARY_PATH: libibverbs programs see soft0 beside the real devices,\n"
		   "  librdmacm programs connect on it.\n"
		   "  RVERBS_COMPAT_DIR overrides where the layer is looked for.\n");
}

static int has_layer(const char *dir)
{
	char path[PATH_MAX];

	return snprintf(path, sizeof(path), "%s/libibverbs.so.1", dir) < (int)sizeof(path) &&
	       access(path, R_OK) == 0;
}

/* The layer's directory: RVERBS_COMPAT_DIR, else the build tree's compat/
 * beside tools/ (an uninstalled rverbs), else the installed one, found from
 * this executable's own place as its RUNPATH finds librverbs. */
static int find_layer(char *out, size_t size)
{
	const char *env = getenv("RVERBS_COMPAT_DIR");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		if (!has_layer(env)) {
			fprintf(stderr, "rverbs run: RVERBS_COMPAT_DIR=%s holds no libibverbs.so.1\n", env);
			return -1;
		}
		snprintf(out, size, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "rverbs run: cannot find this executable (/proc/self/exe): %s\n",
			strerror(errno));
		return -1;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (snprintf(out, size, "%s/../compat", exe) < (int)size && has_layer(out))
		return 0;
	if (snprintf(out, size, "%s/%s", exe, RVERBS_COMPAT_FROM_BINDIR) < (int)size && has_layer(out))
		return 0;
	fprintf(stderr, "rverbs run: the compatibility layer (libibverbs.so.1) is not installed "
			"(looked in %s/../compat and %s); build with -Dcompat=true\n",
		exe, out);
	return -1;
}

int cmd_run(int argc, char **argv)
{
	char dir[PATH_MAX], *path;
	const char *old;
	int first = 1;
	size_t len;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		run_usage(stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--") == 0)
		first = 2;
	if (first >= argc) {
		run_usage(stderr);
		return 2;
	}
	if (find_layer(dir, sizeof(dir)) < 0)
		return 1;
	old = getenv("LD_LIBRARY_PATH");
	len = strlen(dir) + (old && *old ? strlen(old) + 1 : 0) + 1;
	path = malloc(len);
	if (!path) {
		fprintf(stderr, "rverbs run: out of memory\n");
		return 1;
	}
	snprintf(path, len, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
	if (setenv("LD_LIBRARY_PATH", path, 1) < 0) {
		fprintf(stderr, "rverbs run: setenv: %s\n", strerror(errno));
		free(path);
		return 1;
	}
	free(path);
	execvp(argv[first], argv + first);
	fprintf(stderr, "rverbs run: %s: %s\n", argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
