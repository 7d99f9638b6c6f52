/*
 * `rverbs doctor`: the RDMA deployment checklist, each check PASS, WARN or
 * FAIL with the fix. Exit status 1 when any check FAILED.
 *
 * What the kernel offers is read from sysfs, /proc and /dev under roots that
 * tests (and curious users) can point at a fake tree: --root DIR (or the
 * environment variable RVERBS_DOCTOR_ROOT) reads DIR/sys, DIR/proc and DIR/dev;
 * --sysfs-root DIR overrides only the sysfs root. What rverbs itself sees
 * (device list, ports, the default device) comes from the library.
 * Never changes anything on the machine.
 */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "tools.h"

enum status { PASS, WARN, FAIL };
static const char *const status_name[] = {"PASS", "WARN", "FAIL"};

struct doctor {
	char root[512], sys[512], proc[512], dev[512];
	bool json;
	struct json js;
	int count[3];
};

static void check(struct doctor *d, enum status st, const char *name, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void check(struct doctor *d, enum status st, const char *name, const char *fix, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	d->count[st]++;
	if (d->json) {
		json_object_begin(&d->js, NULL);
		json_string(&d->js, "name", name);
		json_string(&d->js, "status", status_name[st]);
		json_string(&d->js, "detail", detail);
		if (st != PASS && fix)
			json_string(&d->js, "fix", fix);
		json_object_end(&d->js);
		return;
	}
	printf("%s  %-20s %s\n", status_name[st], name, detail);
	if (st != PASS && fix)
		printf("      %-20s fix: %s\n", "", fix);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Names in a directory (no dot entries), sorted; returns the count (≤ max). */
static int list_dir(const char *path, char names[][64], int max)
{
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, alphasort), k = 0;

	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.' && k < max)
			snprintf(names[k++], 64, "%s", ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	return k;
}

static void check_memlock(struct doctor *d)
{
	static const char fix[] = "raise it: `ulimit -l unlimited` in the shell, `* - memlock unlimited` in "
		"/etc/security/limits.conf, LimitMEMLOCK=infinity for a systemd service, "
		"`--ulimit memlock=-1` for a container";
	struct rlimit rl;
	char cur[32], line[256], path[600];
	unsigned long long locked_kib = 0;
	FILE *f;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		check(d, WARN, "memlock", NULL, "getrlimit(RLIMIT_MEMLOCK) failed: %s", strerror(errno));
		return;
	}
	if (rl.rlim_cur == RLIM_INFINITY) {
		check(d, PASS, "memlock", NULL, "RLIMIT_MEMLOCK is unlimited: registrations are bounded only by memory");
		return;
	}
	snprintf(path, sizeof(path), "%s/self/status", d->proc);
	if ((f = fopen(path, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "VmLck: %llu kB", &locked_kib) == 1)
				break;
		fclose(f);
	}
	unsigned long long left = rl.rlim_cur > locked_kib * 1024 ? rl.rlim_cur - locked_kib * 1024 : 0;
	format_size(rl.rlim_cur, cur, sizeof(cur));
	char allow[32];
	format_size(left, allow, sizeof(allow));
	if (rl.rlim_cur < (1u << 20))
		check(d, FAIL, "memlock", fix, "RLIMIT_MEMLOCK is %s: hardware devices can register at most %s "
		      "in total (pinned memory), too little for even one QP's buffers", cur, allow);
	else if (rl.rlim_cur < (64u << 20))
		check(d, WARN, "memlock", fix, "RLIMIT_MEMLOCK is %s: hardware devices can register at most %s "
		      "in total; large buffers will fail with ENOMEM", cur, allow);
	else
		check(d, PASS, "memlock", NULL, "RLIMIT_MEMLOCK is %s: registrations up to %s", cur, allow);
}

static void check_hugepages(struct doctor *d)
{
	char path[600], line[256];
	long total = -1, freep = -1, size_kib = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/meminfo", d->proc);
	f = fopen(path, "r");
	if (!f) {
		check(d, WARN, "hugepages", "check that /proc is mounted", "cannot read %s", path);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "HugePages_Total: %ld", &total);
		sscanf(line, "HugePages_Free: %ld", &freep);
		sscanf(line, "Hugepagesize: %ld kB", &size_kib);
	}
	fclose(f);
	if (total <= 0)
		check(d, PASS, "hugepages", NULL, "none configured (optional: normal pages are used; for large "
		      "registered buffers reserve some with `sysctl vm.nr_hugepages=N`)");
	else if (freep == 0)
		check(d, WARN, "hugepages", "reserve more: `sysctl vm.nr_hugepages=N` (N larger than now)",
		      "%ld huge pages of %ld kB configured, none free", total, size_kib);
	else
		check(d, PASS, "hugepages", NULL, "%ld huge pages of %ld kB configured, %ld free", total, size_kib, freep);
}

static const char *const provider_modules[] = {
	"mlx5_ib", "mlx4_ib", "rdma_rxe", "siw", "irdma", "i40iw", "efa", "bnxt_re", "hfi1", "qedr",
	"erdma", "mana_ib", "hns_roce_hw_v2", "ocrdma", "vmw_pvrdma", "cxgb4", "ib_qib", "ionic_rdma",
};

/* Returns the number of kernel RDMA devices. */
static int check_kernel(struct doctor *d, char ibdevs[][64], int max)
{
	char path[600], names[16][64], loaded[512] = "";
	int n_dev, n_uverbs = 0;
	bool uverbs_mod, access_ok = true;

	snprintf(path, sizeof(path), "%s/class/infiniband", d->sys);
	n_dev = list_dir(path, ibdevs, max);
	snprintf(path, sizeof(path), "%s/module/ib_uverbs", d->sys);
	uverbs_mod = exists(path);
	snprintf(path, sizeof(path), "%s/infiniband", d->dev);
	int n = list_dir(path, names, 16);
	for (int i = 0; i < n; i++) {
		if (strncmp(names[i], "uverbs", 6) != 0)
			continue;
		n_uverbs++;
		snprintf(path, sizeof(path), "%s/infiniband/%s", d->dev, names[i]);
		if (access(path, R_OK | W_OK) < 0)
			access_ok = false;
	}
	if (n_dev == 0 && !uverbs_mod)
		check(d, WARN, "kernel-rdma", "for a NIC load its provider and ib_uverbs (`modprobe mlx5_ib ib_uverbs`); "
		      "for a kernel software device: `rdma link add rxe0 type rxe netdev eth0`",
		      "no kernel RDMA support (no devices in %s/class/infiniband, ib_uverbs not loaded): "
		      "only the software device soft0 is available", d->sys);
	else if (n_dev > 0 && n_uverbs == 0)
		check(d, FAIL, "kernel-rdma", "load the user-space verbs interface: `modprobe ib_uverbs`",
		      "%d kernel RDMA device(s) but no %s/infiniband/uverbs*: libibverbs cannot open them", n_dev, d->dev);
	else if (!access_ok)
		check(d, FAIL, "kernel-rdma", "give the user read/write access to /dev/infiniband/uverbs* "
		      "(the rdma group, or a udev rule)", "%s/infiniband/uverbs* exist but are not readable and writable by this user", d->dev);
	else
		check(d, PASS, "kernel-rdma", NULL, "%d kernel RDMA device(s), ib_uverbs %s, %d uverbs device node(s)",
		      n_dev, uverbs_mod ? "loaded" : "built in", n_uverbs);

	for (size_t i = 0; i < sizeof(provider_modules) / sizeof(provider_modules[0]); i++) {
		snprintf(path, sizeof(path), "%s/module/%s", d->sys, provider_modules[i]);
		if (exists(path)) {
			if (loaded[0])
				strncat(loaded, ", ", sizeof(loaded) - strlen(loaded) - 1);
			strncat(loaded, provider_modules[i], sizeof(loaded) - strlen(loaded) - 1);
		}
	}
	/* libibverbs' user-space providers: one *.driver file each in /etc/libibverbs.d. */
	char etc[600], drivers[16][64];
	snprintf(etc, sizeof(etc), "%s/etc/libibverbs.d", d->root);
	int n_user = list_dir(etc, drivers, 16);
	if (loaded[0])
		check(d, PASS, "providers", NULL, "kernel providers loaded: %s; %d libibverbs provider(s) in %s",
		      loaded, n_user, etc);
	else if (n_dev > 0)
		check(d, WARN, "providers", "load the provider module of the NIC (mlx5_ib, irdma, efa, ...)",
		      "RDMA devices exist but no known provider module is loaded");
	else
		check(d, PASS, "providers", NULL, "no kernel provider loaded (none needed for soft0)");

	snprintf(path, sizeof(path), "%s/infiniband/rdma_cm", d->dev);
	if (exists(path))
		check(d, PASS, "rdma_cm", NULL, "%s exists: rdma_cm connections are possible", path);
	else if (n_dev > 0)
		check(d, WARN, "rdma_cm", "`modprobe rdma_ucm`", "%s is missing: connections use the TCP "
		      "endpoint exchange only", path);
	else
		check(d, PASS, "rdma_cm", NULL, "not available (no kernel RDMA); rverbs connects with its TCP "
		      "endpoint exchange");
	return n_dev;
}

static int my_numa_node(void)
{
	unsigned cpu, node;
	return getcpu(&cpu, &node) == 0 ? (int)node : -1;
}

/* The NUMA nodes this process may allocate memory on ("0-1"), from procfs. */
static void my_mem_nodes(const struct doctor *d, char *buf, size_t len)
{
	char path[600], line[256];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "%s/self/status", d->proc);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Mems_allowed_list: %63s", buf) == 1)
			break;
	fclose(f);
}

/* Whether node is in a list like "0-1,3". */
static bool node_in(const char *list, int node)
{
	const char *p = list;

	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			return true; /* unreadable: do not complain */
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (node >= a && node <= b)
			return true;
		p = *end == ',' ? end + 1 : end;
		if (*end != ',')
			break;
	}
	return false;
}

static void check_kernel_device(struct doctor *d, const char *dev)
{
	char path[700], val[128], ports[16][64], name[96], mems[64];
	int n_ports, node, me = my_numa_node();

	my_mem_nodes(d, mems, sizeof(mems));

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/numa_node", d->sys, dev);
	snprintf(name, sizeof(name), "numa %s", dev);
	if (!read_line(path, val, sizeof(val)) || (node = atoi(val)) < 0)
		check(d, PASS, name, NULL, "the device reports no NUMA node (single-node machine or virtual device)");
	else if (me >= 0 && node != me) {
		char fix[160];
		snprintf(fix, sizeof(fix), "run next to the device: `numactl --cpunodebind=%d --membind=%d ...`", node, node);
		check(d, WARN, name, fix, "device on NUMA node %d, this process runs on node %d: every "
		      "access crosses the interconnect", node, me);
	} else if (!node_in(mems, node)) {
		char fix[160];
		snprintf(fix, sizeof(fix), "allow memory on the device's node: `numactl --membind=%d ...` or "
			 "widen the cpuset's mems", node);
		check(d, WARN, name, fix, "device on NUMA node %d, but this process may allocate memory only on "
		      "node(s) %s: its buffers are remote to the device", node, mems);
	} else {
		check(d, PASS, name, NULL, "device on NUMA node %d, process on node %d, memory on node(s) %s",
		      node, me, mems);
	}

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports", d->sys, dev);
	n_ports = list_dir(path, ports, 16);
	for (int p = 0; p < n_ports; p++) {
		char state[64] = "?", phys[64] = "?", ll[64] = "?";
		snprintf(name, sizeof(name), "port %s/%s", dev, ports[p]);
#define PORT_FILE(file, buf) \
		snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/" file, d->sys, dev, ports[p]); \
		read_line(path, buf, sizeof(buf))
		PORT_FILE("state", state);
		PORT_FILE("phys_state", phys);
		PORT_FILE("link_layer", ll);
		if (strstr(state, "ACTIVE"))
			check(d, PASS, name, NULL, "%s, physical %s, %s", state, phys, ll);
		else
			check(d, FAIL, name, strcmp(ll, "InfiniBand") == 0 ?
			      "check the cable and that a subnet manager runs (`systemctl start opensm`); `ibstat` shows the link" :
			      "bring the network interface up (`ip link set dev IFACE up`) and check the cable; "
			      "`rdma link` shows which interface backs the port",
			      "state %s (physical %s), %s: no traffic can pass", state, phys, ll);

		/* GIDs: the first non-zero one; on Ethernet a RoCE v2 GID and its interface. */
		int first = -1, v2 = -1;
		char gid0[64] = "", v2gid[64] = "", ndev[64] = "";
		for (int i = 0; i < 256; i++) {
			char g[64], t[64];
			snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gids/%d", d->sys, dev, ports[p], i);
			if (!read_line(path, g, sizeof(g)))
				break;
			if (strcmp(g, "0000:0000:0000:0000:0000:0000:0000:0000") == 0)
				continue;
			if (first < 0) {
				first = i;
				snprintf(gid0, sizeof(gid0), "%s", g);
			}
			snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gid_attrs/types/%d", d->sys, dev,
				 ports[p], i);
			if (v2 < 0 && read_line(path, t, sizeof(t)) && strstr(t, "v2")) {
				v2 = i;
				snprintf(v2gid, sizeof(v2gid), "%s", g);
				snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/gid_attrs/ndevs/%d", d->sys,
					 dev, ports[p], i);
				if (!read_line(path, ndev, sizeof(ndev)))
					snprintf(ndev, sizeof(ndev), "?");
			}
		}
		snprintf(name, sizeof(name), "gid %s/%s", dev, ports[p]);
		if (first < 0)
			check(d, FAIL, name, "give the port's network interface an IP address (RoCE/iWARP), or "
			      "check the subnet manager (InfiniBand)", "the GID table is empty");
		else if (strcmp(ll, "Ethernet") == 0 && v2 < 0)
			check(d, WARN, name, "assign an IPv4/IPv6 address to the interface that backs the port "
			      "(`rdma link` names it); RoCE v2 GIDs follow the addresses",
			      "GID[%d] %s, but no RoCE v2 GID: traffic cannot be routed over IP", first, gid0);
		else if (v2 >= 0)
			check(d, PASS, name, NULL, "RoCE v2 GID[%d] %s on %s", v2, v2gid, ndev);
		else
			check(d, PASS, name, NULL, "GID[%d] %s", first, gid0);
	}
}

static void check_rverbs_device(struct doctor *d, rv_device *dev)
{
	char name[96];
	rv_context *ctx = NULL;
	rv_device_attr da = {.mask = RV_DEVICE_ATTR_ALL};
	int rc;

	snprintf(name, sizeof(name), "device %s", rv_device_name(dev));
	rc = rv_context_new(dev, NULL, &ctx);
	if (rc == 0)
		rc = rv_context_query_device(ctx, &da);
	if (rc < 0) {
		check(d, FAIL, name, "see the message; `rverbs info -d NAME` repeats it", "rverbs cannot open it: %s",
		      rv_error_last());
		rv_context_unref(ctx);
		return;
	}
	for (uint32_t p = 1; p <= da.phys_port_cnt && p < 256; p++) {
		rv_port_attr pa = {.mask = RV_PORT_ATTR_ALL};
		if (rv_context_query_port(ctx, (uint8_t)p, &pa) < 0) {
			check(d, FAIL, name, NULL, "port %u cannot be queried: %s", p, rv_error_last());
			continue;
		}
		if (pa.state != RV_PORT_ACTIVE)
			check(d, FAIL, name, "bring the port's link up (see the port check above)",
			      "port %u is %s", p, port_state_name(pa.state));
		else if (pa.active_mtu < pa.max_mtu && pa.link_layer == RV_LINK_LAYER_ETHERNET &&
			 rv_device_kind_of(dev) != RV_DEVICE_SOFT)
			check(d, WARN, name, "raise the interface MTU (`ip link set dev IFACE mtu 9000`): RoCE "
			      "uses the largest IB MTU below it", "port %u ACTIVE, active MTU %d below the "
			      "device's %d", p, mtu_bytes(pa.active_mtu), mtu_bytes(pa.max_mtu));
		else
			check(d, PASS, name, NULL, "port %u ACTIVE, MTU %d (max %d), %s, atomics %s", p,
			      mtu_bytes(pa.active_mtu), mtu_bytes(pa.max_mtu), link_layer_name(pa.link_layer),
			      atomic_cap_name(da.atomic_cap));
	}
	rv_context_close(ctx);
	rv_context_unref(ctx);
}

struct why {
	char text[256];
};

static void capture_log(rv_log_level level, const char *msg, void *user)
{
	struct why *w = user;
	if (level == RV_LOG_INFO && strstr(msg, "default device"))
		snprintf(w->text, sizeof(w->text), "%s", msg);
}

static void check_default(struct doctor *d, rv_device **list, size_t n)
{
	struct why w = {""};
	rv_device *dev = NULL;
	const char *env = getenv("RVERBS_DEVICE");
	int rc;

	rv_set_log_handler(capture_log, &w);
	rv_set_log_level(RV_LOG_INFO);
	rc = rv_device_default(&dev);
	rv_set_log_level(RV_LOG_WARN);
	rv_set_log_handler(NULL, NULL);
	if (rc < 0) {
		char fix[512] = "";
		size_t off = (size_t)snprintf(fix, sizeof(fix), "%s", env && *env ?
			"unset RVERBS_DEVICE or set it to one of:" : "build rverbs with the software device "
			"(-Dsoft_device=true) or install an RDMA device; devices:");
		for (size_t i = 0; i < n && off < sizeof(fix); i++)
			off += (size_t)snprintf(fix + off, sizeof(fix) - off, " %s", rv_device_name(list[i]));
		check(d, FAIL, "default-device", fix, "no default device: %s", rv_error_last());
		return;
	}
	const char *why = strstr(w.text, ": ");
	check(d, PASS, "default-device", NULL, "rverbs picks %s (%s)", rv_device_name(dev),
	      why ? why + 2 : "the first device");
	rv_device_unref(dev);
}

static void set_root(struct doctor *d, const char *root)
{
	snprintf(d->root, sizeof(d->root), "%s", root);
	snprintf(d->sys, sizeof(d->sys), "%s/sys", root);
	snprintf(d->proc, sizeof(d->proc), "%s/proc", root);
	snprintf(d->dev, sizeof(d->dev), "%s/dev", root);
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"root", required_argument, NULL, 'r'},
		{"sysfs-root", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char usage[] = "usage: rverbs doctor [--json] [--root DIR] [--sysfs-root DIR]\n"
		"  --root DIR        read DIR/sys, DIR/proc and DIR/dev (default /; env RVERBS_DOCTOR_ROOT)\n"
		"  --sysfs-root DIR  read sysfs from DIR instead\n";
	struct doctor d = {.json = false};
	const char *root = getenv("RVERBS_DOCTOR_ROOT");
	char ibdevs[32][64];
	rv_device **list = NULL;
	size_t n = 0;
	int opt, n_ib;

	set_root(&d, root ? root : "");
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': d.json = true; break;
		case 'r': set_root(&d, optarg); break;
		case 's': snprintf(d.sys, sizeof(d.sys), "%s", optarg); break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (d.json) {
		json_init(&d.js, stdout);
		json_object_begin(&d.js, NULL);
		json_array_begin(&d.js, "checks");
	} else {
		printf("rverbs doctor %s: checking this machine's RDMA setup\n", rv_version());
	}
	check_memlock(&d);
	check_hugepages(&d);
	n_ib = check_kernel(&d, ibdevs, 32);
	for (int i = 0; i < n_ib; i++)
		check_kernel_device(&d, ibdevs[i]);
	if (rv_device_list(&list, &n) < 0) {
		check(&d, FAIL, "devices", NULL, "rv_device_list failed: %s", rv_error_last());
	} else {
		if (n == 0)
			check(&d, FAIL, "devices", "build rverbs with -Dsoft_device=true or install an RDMA device",
			      "rverbs sees no device at all");
		for (size_t i = 0; i < n; i++)
			check_rverbs_device(&d, list[i]);
		check_default(&d, list, n);
		rv_device_list_free(list);
	}
	if (d.json) {
		json_array_end(&d.js);
		json_object_begin(&d.js, "summary");
		json_int(&d.js, "passed", d.count[PASS]);
		json_int(&d.js, "warnings", d.count[WARN]);
		json_int(&d.js, "failed", d.count[FAIL]);
		json_object_end(&d.js);
		json_bool(&d.js, "ok", d.count[FAIL] == 0);
		json_object_end(&d.js);
		json_finish(&d.js);
	} else {
		printf("summary: %d passed, %d warning(s), %d failed\n", d.count[PASS], d.count[WARN], d.count[FAIL]);
	}
	return d.count[FAIL] ? 1 : 0;
}
