/*
 * `rverbs run [--] PROGRAM [ARGS...]`: runs an unmodified libibverbs or
 * librdmacm program with the compatibility layer (compat/) in front of the
 * system's libraries, so that it sees soft0 beside the real devices and
 * connects on it with rdma_cm (docs/compat.md).
 *
 * It sets LD_LIBRARY_PATH, gives the program a view of /sys/class in which
 * soft0 exists where the kernel allows a private mount namespace (below),
 * and execs: the program's exit status is its own, and a program that
 * cannot be started exits 127 (not found) or 126, as a shell says.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools.h"

static void run_usage(FILE *f)
{
	fprintf(f, "usage: rverbs run [--] PROGRAM [ARGS...]\n"
		   "  runs PROGRAM with rverbs' libibverbs.so.1 and librdmacm.so.1 first on\n"
		   "  LD_LIBRARY_PATH: libibverbs programs see soft0 beside the real devices,\n"
		   "  librdmacm programs connect on it.\n"
		   "  RVERBS_COMPAT_DIR overrides where the layer is looked for.\n"
		   "  Where a private mount namespace is allowed, /sys/class/infiniband shows\n"
		   "  soft0 (with device/net/IFNAME) beside the real devices;\n"
		   "  RVERBS_RUN_SYSFS=0 leaves sysfs as it is.\n");
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

/*
 * The sysfs view: rdma-core's Python tests (and other programs) find a
 * device's netdev through /sys/class/infiniband/DEV/device/net/IFNAME. In a
 * private mount namespace (as root, or in a user namespace of our own where
 * the kernel allows one unprivileged), /sys/class becomes a tmpfs whose
 * entries link to the real ones (bind-mounted at /sys/class/.real), with an
 * infiniband/ directory that holds the real devices' links and a soft0
 * directory: ports/1 (state, link layer, GID 0 and its type and netdev) and
 * device/net/IFNAME, the interface that owns soft0's listen address
 * (RVERBS_SOFT_LISTEN_ADDR, 127.0.0.1 by default: lo). Nothing is left
 * behind: the mounts end with the namespace. Where none can be made the
 * program runs without the view (docs/compat.md says what then works).
 */
#define VIEW "/sys/class"
#define REAL VIEW "/.real"

static int put_file(const char *path, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int fd, n, ok;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(buf))
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return -1;
	ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	return ok ? 0 : -1;
}

static int mkdirs(const char *path)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -1;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* The interface that owns addr (IPv4 text); "lo" for loopback or a wildcard. */
static void listen_ifname(const char *addr, char *out, size_t size)
{
	struct ifaddrs *ifa, *i;
	struct in_addr want;

	snprintf(out, size, "lo");
	if (inet_pton(AF_INET, addr, &want) != 1 || want.s_addr == htonl(INADDR_ANY) ||
	    getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == want.s_addr) {
			snprintf(out, size, "%s", i->ifa_name);
			break;
		}
	freeifaddrs(ifa);
}

static int write_map(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

/* A mount namespace we may mount in: root's own, else one in a user
 * namespace mapping only our uid and gid to themselves. */
static int private_mounts(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (uid == 0 && unshare(CLONE_NEWNS) == 0)
		return 0;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_map("/proc/self/uid_map", map) < 0)
		return -1;
	if (write_map("/proc/self/setgroups", "deny") < 0)
		return -1;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_map("/proc/self/gid_map", map);
}

/* VIEW/cls/NAME for each REAL/cls/NAME: its link target as it is, or (not
 * a link) a link to the real entry. soft0 is left out (the view's own). */
static int copy_class(const char *cls)
{
	char path[PATH_MAX], src[PATH_MAX], target[PATH_MAX];
	struct dirent *e;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), REAL "/%s", cls);
	d = opendir(path);
	if (!d)
		return 0; /* not a directory: nothing to show */
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || (strcmp(cls, "infiniband") == 0 && strcmp(e->d_name, "soft0") == 0))
			continue;
		snprintf(src, sizeof(src), REAL "/%s/%s", cls, e->d_name);
		n = readlink(src, target, sizeof(target) - 1);
		if (n >= 0)
			target[n] = '\0';
		else
			snprintf(target, sizeof(target), "%s", src);
		snprintf(path, sizeof(path), VIEW "/%s/%s", cls, e->d_name);
		if (symlink(target, path) < 0) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

static int build_view(void)
{
	const char *env = getenv("RVERBS_SOFT_LISTEN_ADDR");
	const char *listen = env && *env ? env : "127.0.0.1";
	char ifname[IF_NAMESIZE + 1], path[PATH_MAX], src[PATH_MAX];
	struct in_addr a4;
	struct dirent *e;
	uint8_t gid[16] = {0};
	DIR *d;
	int fd;

	listen_ifname(listen, ifname, sizeof(ifname));
	if (inet_pton(AF_INET, listen, &a4) == 1) { /* the GID: IPv4-mapped, as soft0's */
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &a4, 4);
	}
	fd = open(VIEW, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("rverbs-sysfs", VIEW, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") < 0 ||
	    mkdir(REAL, 0755) < 0 || mount(src, REAL, NULL, MS_BIND, NULL) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	/* Every class as a directory of the real entries: sysfs' links are
	 * relative ("../../devices/..."), so they keep their depth here. */
	d = opendir(REAL);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), VIEW "/%s", e->d_name);
		if (mkdir(path, 0755) < 0 || copy_class(e->d_name) < 0) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	if (mkdir(VIEW "/infiniband", 0755) < 0 && errno != EEXIST)
		return -1;
	if (mkdirs(VIEW "/infiniband/soft0/device/net") < 0 ||
	    mkdirs(VIEW "/infiniband/soft0/ports/1/gids") < 0 ||
	    mkdirs(VIEW "/infiniband/soft0/ports/1/gid_attrs/types") < 0 ||
	    mkdirs(VIEW "/infiniband/soft0/ports/1/gid_attrs/ndevs") < 0)
		return -1;
	snprintf(src, sizeof(src), VIEW "/net/%s", ifname);
	snprintf(path, sizeof(path), VIEW "/infiniband/soft0/device/net/%s", ifname);
	if (symlink(src, path) < 0)
		return -1;
	snprintf(src, sizeof(src), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x\n",
		 gid[0], gid[1], gid[2], gid[3], gid[4], gid[5], gid[6], gid[7], gid[8], gid[9], gid[10],
		 gid[11], gid[12], gid[13], gid[14], gid[15]);
	if (put_file(VIEW "/infiniband/soft0/node_type", "1: CA\n") < 0 ||
	    put_file(VIEW "/infiniband/soft0/ports/1/state", "4: ACTIVE\n") < 0 ||
	    put_file(VIEW "/infiniband/soft0/ports/1/phys_state", "5: LinkUp\n") < 0 ||
	    put_file(VIEW "/infiniband/soft0/ports/1/link_layer", "Ethernet\n") < 0 ||
	    put_file(VIEW "/infiniband/soft0/ports/1/gids/0", "%s", src) < 0 ||
	    put_file(VIEW "/infiniband/soft0/ports/1/gid_attrs/types/0", "RoCE v2\n") < 0 ||
	    put_file(VIEW "/infiniband/soft0/ports/1/gid_attrs/ndevs/0", "%s\n", ifname) < 0)
		return -1;
	return mount(NULL, VIEW, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? -1 : 0;
}

/* 0: the program runs in the view; -1: without it (nothing changed that
 * it would see, but possibly its own mount namespace). */
static int sysfs_view(void)
{
	const char *env = getenv("RVERBS_RUN_SYSFS");
	struct stat st;
	int err;

	if (env && strcmp(env, "0") == 0)
		return -1;
	if (stat(VIEW "/infiniband/soft0", &st) == 0 || stat(VIEW, &st) < 0)
		return -1; /* already there (a view, or a real soft0), or no sysfs */
	if (private_mounts() < 0)
		return -1;
	if (build_view() == 0)
		return 0;
	/* A view half made is worse than none: back to the real /sys/class. */
	err = errno;
	umount2(REAL, MNT_DETACH);
	umount2(VIEW, MNT_DETACH);
	errno = err;
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
	if (sysfs_view() < 0 && getenv("RVERBS_RUN_VERBOSE"))
		fprintf(stderr, "rverbs run: no sysfs view of soft0 (%s); running without it\n",
			strerror(errno));
	execvp(argv[first], argv + first);
	fprintf(stderr, "rverbs run: %s: %s\n", argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
