/*
 * The attacker's side of the attack suites: see attack-peer.h.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attack-peer.h"
#include "test-clock.h"

void atk_target_arm(struct atk_target *t)
{
	rv_endpoint fake = t->ep;
	rv_sge g = {.addr = (uint64_t)(uintptr_t)(t->buf + t->len - 64), .length = 64, .lkey = rv_mr_lkey(t->mr)};

	fake.lid = ATK_FAKE_PORT;
	fake.qpn = ATK_FAKE_QPN;
	assert_int_equal(rv_qp_to_init(t->qp, NULL), 0);
	assert_int_equal(rv_qp_recv(t->qp, &g, 77), 0);
	assert_int_equal(rv_qp_connect(t->qp, &fake), 0);
}

void atk_target_open(struct atk_target *t, const rv_context_attr *attr, rv_qp_type qp_type, size_t len)
{
	rv_device *dev;
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ | RV_QP_INIT_ATTR_TYPE, .qp_type = qp_type};

	memset(t, 0, sizeof(*t));
	assert_int_equal(rv_device_find("soft0", &dev), 0);
	assert_int_equal(rv_context_new(dev, attr, &t->ctx), 0);
	rv_device_unref(dev);
	assert_int_equal(rv_pd_new(t->ctx, NULL, &t->pd), 0);
	assert_int_equal(rv_cq_new(t->ctx, NULL, &t->cq), 0);
	qa.send_cq = t->cq;
	assert_int_equal(rv_qp_new(t->pd, &qa, &t->qp), 0);
	assert_int_equal(rv_mr_alloc(t->pd, len, RV_ACCESS_ALL_REMOTE, NULL, &t->mr), 0);
	t->buf = rv_mr_addr(t->mr);
	t->len = len;
	memset(t->buf, 0xab, len);
	assert_int_equal(rv_qp_endpoint(t->qp, &t->ep), 0);
	atk_target_arm(t);
}

void atk_target_rearm(struct atk_target *t)
{
	rv_qp_attr a = {.mask = RV_QP_STATE, .qp_state = RV_QPS_RESET};
	rv_wc wc[16];

	assert_int_equal(rv_qp_modify(t->qp, &a), 0);
	while (rv_cq_poll(t->cq, wc, 16) > 0)
		;
	memset(t->buf, 0xab, t->len);
	atk_target_arm(t);
}

void atk_target_close(struct atk_target *t)
{
	rv_qp_unref(t->qp);
	rv_mr_unref(t->mr);
	rv_cq_unref(t->cq);
	rv_pd_unref(t->pd);
	assert_int_equal(rv_context_close(t->ctx), 0);
	rv_context_unref(t->ctx);
}

int atk_wait_state(const struct atk_target *t, int want, int ms)
{
	int64_t end = now_ms() + ms;
	int s;

	while ((s = rv_qp_state_of(t->qp)) != want && now_ms() < end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return s;
}

int atk_connect(const struct atk_target *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(t->ep.lid)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memcpy(&a.sin_addr, t->ep.gid + 12, 4); /* soft0's GID: the IPv4-mapped listening address */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads exactly n bytes within ms; false on EOF or timeout. */
static bool read_n(int fd, uint8_t *buf, size_t n, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int64_t end = now_ms() + ms;
	size_t got = 0;

	while (got < n) {
		int left = (int)(end - now_ms());
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left) != 1)
			return false;
		r = recv(fd, buf + got, n - got, 0);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

int atk_request(int fd, const struct atk_target *t, uint32_t caps, const uint8_t *extra, size_t extra_len,
		uint8_t *reply_pd, size_t cap, size_t *reply_len)
{
	uint8_t pd[RV_MPA_PD_MAX], frame[RV_MPA_HDR_LEN + RV_MPA_PD_MAX], reply[RV_MPA_HDR_LEN + RV_MPA_PD_MAX];
	struct rv_soft_cpd c;
	struct rv_mpa_frame f = {.reply = false, .flags = RV_MPA_FLAG_CRC, .rev = 2, .pd = pd};
	struct rv_mpa_frame r;
	size_t pd_len;
	int n;

	memset(&c, 0, sizeof(c));
	memcpy(c.gid, t->ep.gid, 16);
	c.port = ATK_FAKE_PORT;
	c.src_qpn = ATK_FAKE_QPN;
	c.dst_qpn = t->ep.qpn;
	c.ird = c.ord = 16;
	c.caps = caps;
	if (RV_SOFT_CPD_LEN + extra_len > sizeof(pd))
		return -1;
	rv_wire_cpd_encode(pd, sizeof(pd), &c);
	if (extra_len)
		memcpy(pd + RV_SOFT_CPD_LEN, extra, extra_len);
	f.pd_len = (uint16_t)(RV_SOFT_CPD_LEN + extra_len);
	n = rv_wire_mpa_encode(frame, sizeof(frame), &f);
	if (n <= 0 || send(fd, frame, (size_t)n, MSG_NOSIGNAL) != n)
		return -1;
	if (!read_n(fd, reply, RV_MPA_HDR_LEN, 5000))
		return -1;
	pd_len = (size_t)reply[18] << 8 | reply[19];
	if (pd_len > RV_MPA_PD_MAX || !read_n(fd, reply + RV_MPA_HDR_LEN, pd_len, 5000) ||
	    rv_wire_mpa_decode(reply, RV_MPA_HDR_LEN + pd_len, &r) <= 0 || !r.reply)
		return -1;
	if (r.flags & RV_MPA_FLAG_REJECT)
		return 0;
	if (reply_pd) {
		*reply_len = r.pd_len < cap ? r.pd_len : cap;
		memcpy(reply_pd, r.pd, *reply_len);
	}
	return 1;
}

bool atk_send(int fd, const struct rv_fpdu *f)
{
	uint8_t buf[RV_MPA_PD_MAX + 256];
	int n = rv_wire_fpdu_encode(buf, sizeof(buf), f);

	return n > 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n;
}

int atk_recv(int fd, uint8_t *buf, size_t cap, struct rv_fpdu *f, int timeout_ms)
{
	size_t len;

	/* MPA: a 2-byte length, the ULPDU, pad to 4, the CRC. */
	if (cap < 2 || !read_n(fd, buf, 2, timeout_ms))
		return 0;
	len = (size_t)buf[0] << 8 | buf[1];
	len = 2 + len;
	len = (len + 3) / 4 * 4 + 4;
	if (len > cap || !read_n(fd, buf + 2, len - 2, timeout_ms))
		return 0;
	return rv_wire_fpdu_decode(buf, len, f) > 0;
}

bool atk_closed(int fd, int ms)
{
	uint8_t b[4096];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int64_t end = now_ms() + ms;

	for (;;) {
		int left = (int)(end - now_ms());
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left) != 1)
			return false;
		r = recv(fd, b, sizeof(b), 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}

pid_t atk_fork(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1); /* the parent went before the line above */
	}
	return pid;
}

int atk_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own descriptor */
}
