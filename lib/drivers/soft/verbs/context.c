/*
 * A software device context: its TCP listener, its QP table and its
 * progress thread (which also serves the UDP socket of ud.c).
 *
 * Owns: the listener socket (bound to listen_addr, port 0 = ephemeral), the
 * epoll set, the eventfd that wakes the thread, and the thread itself. The
 * thread accepts connections, runs connection setup, receives every FPDU,
 * finishes transmissions the posting thread could not (EPOLLOUT) and runs
 * timers. It holds sc->lock while it handles events and never while it
 * waits in epoll_wait. Posting threads transmit directly and wake the thread
 * through the eventfd only when a stalled receive can resume.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "drivers/soft/completion.h"
#include "drivers/soft/iwarp/fault.h"
#include "drivers/soft/soft.h"
#include "drivers/soft/wire/sha256.h"

/* epoll tags for the fds that are not connections. */
static char tag_listener, tag_eventfd, tag_bell, tag_hold;

/*
 * The streams a blocked waiter watched have no reader once it left, until the
 * progress thread hands them back to epoll (soft_conn_handback); a waiter
 * that does not come back (the application got what it waited for, while the
 * peer still needs an answer, e.g. to the confirmation READ of its last
 * SENDs) must not leave them unread for the progress thread's long sleep
 * (up to SOFT_WAIT_HANDBACK_MS, or the 100 ms tick when no stream was
 * polled as it went to sleep). The stamp makes the thread look every
 * millisecond while waiters come and go; the wake-up is written only when it
 * went to sleep for longer (once per quiet period, not per message). The
 * seq_cst pair (stamp, then flag here; flag, then stamp in progress()) means
 * one side sees the other.
 */
int64_t soft_ctx_waiter_left(struct soft_ctx *sc)
{
	uint64_t one = 1;
	int64_t now = soft_now_us();

	atomic_store(&sc->wait_left_at, now);
	if (atomic_load(&sc->long_sleep) && atomic_exchange(&sc->long_sleep, false)) {
		if (write(sc->evfd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is saturated, so the thread is already woken. */
		}
	}
	return now;
}

void soft_ctx_bell(struct soft_ctx *sc, bool on)
{
	struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = &tag_bell};

	if (atomic_load_explicit(&sc->bell_on, memory_order_relaxed) != on &&
	    epoll_ctl(sc->epfd, EPOLL_CTL_MOD, sc->bell_fd, &ev) == 0)
		atomic_store(&sc->bell_on, on);
}

int soft_ctx_add_qp(struct soft_ctx *sc, struct soft_qp *q)
{
	if (sc->n_qps == sc->cap_qps) {
		uint32_t n = sc->cap_qps ? sc->cap_qps * 2 : 16;
		struct soft_qp **a = realloc(sc->qps, n * sizeof(*a));
		if (!a)
			return -ENOMEM;
		sc->qps = a;
		sc->cap_qps = n;
	}
	sc->qps[sc->n_qps++] = q;
	sc->qp_gen++;
	return 0;
}

void soft_ctx_del_qp(struct soft_ctx *sc, struct soft_qp *q)
{
	for (uint32_t i = 0; i < sc->n_qps; i++) {
		if (sc->qps[i] == q) {
			sc->qps[i] = sc->qps[--sc->n_qps];
			sc->qp_gen++;
			return;
		}
	}
}

/* QPs whose stalled receive may resume now that a receive WR was posted. */
static void run_kicks(struct soft_ctx *sc)
{
	for (uint32_t i = 0; i < sc->n_qps; i++) {
		struct soft_qp *q = sc->qps[i];

		soft_lock_take(&q->lock);
		if (q->kick || soft_srq_resumable(q)) {
			q->kick = false;
			if (q->conn && atomic_load(&q->state) == RV_QPS_ERR) {
				/* A posting thread failed the QP: send its TERMINATE, then close. */
				soft_tx_push(q);
				soft_conn_detach(q, true);
			} else if (q->conn && q->conn->state == CONN_UP && q->conn->rx_stalled) {
				q->conn->rx_stalled = false;
				soft_rx_process(q, q->conn);
				if (q->conn)
					soft_tx_push(q);
			}
		}
		soft_lock_give(&q->lock);
	}
}

/* all: the context closes (no waiter can be left); else a zombie a waiter
 * still sleeps in recv on (rx_sleep) waits for it to leave. */
static void free_zombies(struct soft_ctx *sc, bool all)
{
	struct soft_conn **pp = &sc->zombies;

	while (*pp) {
		struct soft_conn *c = *pp;

		if (!all && atomic_load_explicit(&c->rx_sleep, memory_order_acquire)) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		soft_conn_free(c);
	}
}

/* Handle one batch of events (sc->lock held); the caller frees zombies only
 * if it is the progress thread. */
static void handle_batch(struct soft_ctx *sc, const struct epoll_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		void *p = ev[i].data.ptr;
		if (p == &tag_listener) {
			soft_conn_accept(sc);
		} else if (soft_ud_is_tag(sc, p)) {
			soft_ud_rx(sc);
		} else if (p == &tag_hold) {
			uint64_t v;
			if (read(sc->hold_fd, &v, sizeof(v)) < 0) {
				/* EAGAIN: disarmed meanwhile */
			}
			atomic_store(&sc->hold_armed, false); /* a hold from now on arms it again */
			soft_conn_flush_held(sc);
		} else if (p == &tag_eventfd || p == &tag_bell) {
			uint64_t v;
			if (read(p == &tag_bell ? sc->bell_fd : sc->evfd, &v, sizeof(v)) < 0) {
				/* EAGAIN: already drained (a waiter read the doorbell) */
			}
		} else {
			soft_conn_event(p, ev[i].events);
		}
	}
	if (atomic_exchange(&sc->kicked, false))
		run_kicks(sc);
}

void soft_ctx_poll_progress(struct soft_ctx *sc)
{
	struct epoll_event ev[16];
	int n;

	if (sc->stop)
		return;
	n = epoll_wait(sc->epfd, ev, 16, 0);
	if (n > 0) {
		handle_batch(sc, ev, n);
		/* The progress thread may be on its way with the same events;
		 * let it spin rather than sleep again. */
		atomic_store_explicit(&sc->active_at, soft_now_us(), memory_order_relaxed);
	}
	/* Zombies stay for the progress thread: a batch it already took may name them. */
}

static void *progress(void *arg)
{
	struct soft_ctx *sc = arg;
	struct epoll_event ev[64];
	int64_t next_timer = soft_now_ms() + 100;
	int64_t last_look = soft_now_us(); /* µs: the last pass that took sc->lock */
	int peek_left = 0; /* looks without sleeping left (SOFT_RX_PEEKS) */

	for (;;) {
		int64_t now = soft_now_ms(), now_us = soft_now_us();
		int64_t spin_end = atomic_load_explicit(&sc->active_at, memory_order_relaxed) + sc->spin_us;
		bool spinning = sc->spin_us > 0 && now_us < spin_end;
		int timeout = spinning ? 0 : next_timer > now ? (int)(next_timer - now) : 0;
		bool rings = atomic_load_explicit(&sc->rings_live, memory_order_relaxed) != 0;
		int n;

		/* Before reading n_polled and the stamp: a waiter leaving after
		 * these reads sees the flag (soft_ctx_waiter_left). */
		atomic_store(&sc->long_sleep, true);
		/* Streams a poller reads are not in epoll's EPOLLIN interest: look
		 * again soon whether their poller stopped (soft_conn_handback). */
		if (atomic_load(&sc->n_polled)) {
			/* Streams only blocked waiters watch need no look every
			 * millisecond while their waiter stays: it reads them. */
			int look = atomic_load(&sc->n_polled) > atomic_load(&sc->n_watched) ||
						   now_us - atomic_load(&sc->wait_left_at) < SOFT_WAIT_HANDBACK_MS * 1000
					   ? SOFT_POLL_HANDBACK_US / 1000
					   : SOFT_WAIT_HANDBACK_MS;
			if (timeout > look)
				timeout = look;
		}
		/* The doorbell a blocked waiter took (soft_cq_block): back to epoll
		 * once no waiter came for SOFT_POLL_HANDBACK_US; looked at every
		 * millisecond while waiters come and go (a waiter that leaves
		 * writes the eventfd if this thread sleeps longer), not while one
		 * sleeps on it and none left lately. */
		if (rings && !atomic_load(&sc->bell_on) &&
		    (!atomic_load(&sc->ring_waiters) ||
		     now_us - atomic_load(&sc->wait_left_at) < SOFT_WAIT_HANDBACK_MS * 1000) &&
		    timeout > SOFT_POLL_HANDBACK_US / 1000)
			timeout = SOFT_POLL_HANDBACK_US / 1000;
		/* Held READ responses have their timer; a millisecond covers one
		 * that a concurrent disarm cancelled (soft_conn_unhold), or a hold
		 * that found the timer armed as it fired (gathered WRs leave it
		 * armed: soft_conn_hold_release). */
		if (atomic_load(&sc->n_held) && timeout > 1)
			timeout = 1;
		if (rings && timeout > 0)
			timeout = soft_shmring_sleep(sc, timeout); /* shmring.c: doorbells while we sleep */
		if (timeout <= SOFT_POLL_HANDBACK_US / 1000)
			atomic_store_explicit(&sc->long_sleep, false, memory_order_relaxed);
		n = -1;
		/* The last batch read only streams of small FPDUs
		 * (SOFT_RX_PEEK_RUN): let the sender's thread have the CPU and
		 * look again, up to SOFT_RX_PEEKS times while each look finds
		 * events, rather than sleep and be woken by its next send(). On
		 * two CPUs each of those sends woke this thread and switched
		 * (issue #22, tcp4k3: 5 000-7 800 sleeps per 131 072 WRITEs of
		 * 4 KiB). Not for large FPDUs: there the receiver is the
		 * bottleneck, and its yields queued it behind busy tasks (1 MiB
		 * lost a third, 64 KiB a fifth, when every batch peeked). */
		if (timeout > 0 && peek_left > 0) {
			peek_left--;
			sched_yield();
			n = epoll_wait(sc->epfd, ev, 64, 0);
		}
		if (n <= 0) {
			peek_left = 0;
			n = epoll_wait(sc->epfd, ev, 64, timeout);
		}
		atomic_store_explicit(&sc->long_sleep, false, memory_order_relaxed);

		if (n <= 0 && spinning && now < next_timer && !rings)
			continue; /* spin without the lock: nothing to do */
		/* Only a look for streams to hand back while a poller or waiter
		 * holds the lock, serving streams right now: look again later
		 * rather than wait for it (its unlock would then cost it a futex
		 * wake, and this thread a CPU it shares). A kick or a handback
		 * request writes the eventfd (n > 0); a look still takes the lock
		 * at least every SOFT_WAIT_HANDBACK_MS. */
		if (n <= 0 && !rings && now < next_timer && !atomic_load(&sc->kicked) &&
		    !atomic_load(&sc->handback) && now_us - last_look < SOFT_WAIT_HANDBACK_MS * 1000) {
			if (soft_lock_try(&sc->lock) != 0)
				continue;
		} else {
			soft_lock_take(&sc->lock);
		}
		last_look = now_us;
		if (sc->stop) {
			soft_lock_give(&sc->lock);
			break;
		}
		if (n > 0) {
			handle_batch(sc, ev, n);
			atomic_store_explicit(&sc->active_at, soft_now_us(), memory_order_relaxed);
			if (sc->rx_batch == 1 && peek_left == 0)
				peek_left = SOFT_RX_PEEKS;
			else if (sc->rx_batch != 1)
				peek_left = 0;
			sc->rx_batch = 0;
		} else if (atomic_exchange(&sc->kicked, false)) {
			run_kicks(sc);
		}
		if (!atomic_load_explicit(&sc->bell_on, memory_order_relaxed) && !atomic_load(&sc->ring_waiters) &&
		    (atomic_load(&sc->handback) || soft_now_us() - atomic_load(&sc->wait_left_at) >= SOFT_POLL_HANDBACK_US))
			soft_ctx_bell(sc, true); /* level-triggered: a doorbell rung meanwhile is reported */
		if (atomic_load_explicit(&sc->n_polled, memory_order_relaxed))
			soft_conn_handback(sc, soft_now_us(), atomic_exchange(&sc->handback, false));
		if (atomic_load(&sc->n_held))
			soft_conn_flush_held(sc);
		if (sc->n_rings)
			soft_shmring_poll(sc, true); /* a doorbell, a timeout, or a poller stopped */
		now = soft_now_ms();
		if (now >= next_timer) {
			soft_conn_timers(sc, now);
			next_timer = now + 100;
		}
		/* Events of this batch may name zombies; the next batch cannot. */
		free_zombies(sc, false);
		soft_lock_give(&sc->lock);
	}
	return NULL;
}

/* What this context negotiates: rv_context_attr.soft_flags, then the
 * environment (RVERBS_SOFT_CRC=0, RVERBS_SOFT_EXT=0) for programs that cannot
 * change their code. */
static void soft_context_options(struct soft_ctx *sc, const rv_context_attr *attr)
{
	uint32_t f = (attr->mask & RV_CONTEXT_ATTR_SOFT_FLAGS) ? attr->soft_flags : 0;
	const char *e;

	if ((e = getenv("RVERBS_SOFT_CRC")) && strcmp(e, "0") == 0)
		f |= RV_SOFT_CRC_OPTIONAL;
	if ((e = getenv("RVERBS_SOFT_EXT")) && strcmp(e, "0") == 0)
		f |= RV_SOFT_NO_EXT;
	if ((e = getenv("RVERBS_SOFT_ROCE_PORT")) && strcmp(e, "1") == 0)
		f |= RV_SOFT_ROCE_PORT;
	sc->roce_port = (f & RV_SOFT_ROCE_PORT) != 0;
	sc->crc_required = !(f & RV_SOFT_CRC_OPTIONAL);
	sc->caps = (f & RV_SOFT_NO_EXT) ? RV_SOFT_CAP_RNR : SOFT_CAPS; /* RNR is not RFC 7306 */
}

/* The shared secret (auth.c): rv_context_attr.auth_secret, else the contents
 * of the file RVERBS_SOFT_SECRET_FILE names (a path, so that the secret is
 * not in the environment, which other processes of the user can read). */
static int soft_context_secret(struct soft_ctx *sc, const rv_context_attr *attr)
{
	static const char *const fn = "rv_context_new";
	uint8_t buf[SOFT_AUTH_SECRET_MAX + 1];
	const char *path = getenv("RVERBS_SOFT_SECRET_FILE");
	size_t len = 0;
	FILE *f;

	if (attr->mask & RV_CONTEXT_ATTR_AUTH_SECRET)
		return soft_auth_set_key(sc, attr->auth_secret, attr->auth_secret_len);
	if (!path || !*path)
		return 0;
	f = fopen(path, "rbe");
	if (!f) {
		int err = errno;
		return rv_err(err, fn, "RVERBS_SOFT_SECRET_FILE=%s: cannot open: %s", path, strerror(err));
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (len == 0 || len > SOFT_AUTH_SECRET_MAX) {
		memset(buf, 0, sizeof(buf));
		return rv_err(EINVAL, fn, "RVERBS_SOFT_SECRET_FILE=%s: the secret must be 1 to %u bytes (got %s)",
			      path, SOFT_AUTH_SECRET_MAX, len ? "more" : "none");
	}
	soft_auth_set_key(sc, buf, len);
	memset(buf, 0, sizeof(buf));
	return 0;
}

int soft_context_auth_mac(struct rv_context *ctx, const void *msg, size_t len, uint8_t out[32])
{
	const struct soft_ctx *sc = ctx->drv_ctx;
	struct rv_hmac_part part = {msg, len};

	if (!sc || !sc->auth)
		return 0;
	rv_hmac_sha256(sc->auth_key, sc->auth_key_len, &part, 1, out);
	return 1;
}

/* The interface of the IPv4 default route (/proc/net/route), "" if none. */
static void default_route_ifname(char name[IF_NAMESIZE])
{
	FILE *f = fopen("/proc/net/route", "re");
	char line[256], ifn[IF_NAMESIZE];
	unsigned long dst, mask;

	name[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%15s %lx %*x %*x %*d %*d %*d %lx", ifn, &dst, &mask) == 3 && dst == 0 &&
		    mask == 0) {
			memcpy(name, ifn, IF_NAMESIZE);
			break;
		}
	fclose(f);
}

/* A listener on the unspecified address takes connections to every address
 * of this host, but its GID is what peers connect to: the address of the
 * default route's interface, else the first other interface that is up and
 * not loopback (IPv6: not link-local, which needs a scope), else loopback. */
static void routable_gid(int family, uint8_t gid[16])
{
	struct ifaddrs *ifs, *i;
	char dflt[IF_NAMESIZE];
	bool found = false;

	memset(gid, 0, 16);
	if (family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		gid[12] = 127;
		gid[15] = 1;
	} else {
		gid[15] = 1;
	}
	if (getifaddrs(&ifs) < 0)
		return;
	default_route_ifname(dflt);
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (i = ifs; i && !found; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != family || !(i->ifa_flags & IFF_UP) ||
			    (i->ifa_flags & IFF_LOOPBACK) || (pass == 0 && strcmp(i->ifa_name, dflt) != 0))
				continue;
			if (family == AF_INET) {
				memcpy(gid + 12, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
				found = true;
			} else if (!IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr)) {
				memcpy(gid, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
				found = true;
			}
		}
	}
	freeifaddrs(ifs);
}

/* "*" is 0.0.0.0; an unspecified address gets a routable GID (above). */
static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, uint8_t gid[16])
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (strcmp(s, "*") == 0)
		s = "0.0.0.0";
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		*len = sizeof(*a4);
		memset(gid, 0, 10);
		gid[10] = 0xff;
		gid[11] = 0xff;
		memcpy(gid + 12, &a4->sin_addr, 4);
		if (a4->sin_addr.s_addr == htonl(INADDR_ANY))
			routable_gid(AF_INET, gid);
		return AF_INET;
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		*len = sizeof(*a6);
		memcpy(gid, &a6->sin6_addr, 16);
		if (IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr))
			routable_gid(AF_INET6, gid);
		return AF_INET6;
	}
	return -1;
}

static int epoll_add(int epfd, int fd, void *tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void close_fds(struct soft_ctx *sc)
{
	if (sc->lfd >= 0) {
		/* Stop listening even if a fork child holds a copy of the socket. */
		shutdown(sc->lfd, SHUT_RDWR);
		close(sc->lfd);
	}
	if (sc->evfd >= 0)
		close(sc->evfd);
	if (sc->bell_fd >= 0)
		close(sc->bell_fd);
	if (sc->hold_fd >= 0)
		close(sc->hold_fd);
	if (sc->epfd >= 0)
		close(sc->epfd);
	sc->lfd = sc->evfd = sc->bell_fd = sc->hold_fd = sc->epfd = -1;
}

static void ctx_free(struct soft_ctx *sc)
{
	soft_ud_close(sc);
	close_fds(sc);
	soft_event_fini(sc);
	soft_mr_table_fini(sc);
	free(sc->qps);
	free(sc->rings);
	soft_shmring_ctx_fini(sc);
	free(sc);
}

/* A tuning knob from the environment, or def when unset or out of [lo, hi]. */
static long env_long(const char *name, long def, long lo, long hi)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return def;
	x = strtol(v, &end, 10);
	if (*end || x < lo || x > hi) {
		rv_log(RV_LOG_WARN, "soft0: %s=\"%s\" is not a number in [%ld, %ld]; using %ld", name, v, lo, hi,
		       def);
		return def;
	}
	return x;
}

/* A new listener on another ephemeral port (the old port number is taken for
 * UDP); *ss receives its address. -1 with errno on failure. */
static int relisten(struct soft_ctx *sc, struct sockaddr_storage *ss, socklen_t *sl)
{
	int one = 1, fd = socket(sc->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sc->family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	if (bind(fd, (struct sockaddr *)ss, *sl) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)ss, sl) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(sc->lfd);
	sc->lfd = fd;
	sc->port = ntohs(sc->family == AF_INET ? ((struct sockaddr_in *)ss)->sin_port
					       : ((struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/* The process's live contexts, for soft_ctx_handback_from: a poller's
 * thread remembers the last context it polled, which may close meanwhile. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct soft_ctx *reg_head;
static uint64_t reg_serial;

static void reg_add(struct soft_ctx *sc)
{
	pthread_mutex_lock(&reg_lock);
	sc->serial = ++reg_serial;
	sc->reg_next = reg_head;
	reg_head = sc;
	pthread_mutex_unlock(&reg_lock);
}

static void reg_del(struct soft_ctx *sc)
{
	pthread_mutex_lock(&reg_lock);
	for (struct soft_ctx **pp = &reg_head; *pp; pp = &(*pp)->reg_next) {
		if (*pp == sc) {
			*pp = sc->reg_next;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

void soft_ctx_handback_from(struct soft_ctx *sc, uint64_t serial)
{
	pthread_mutex_lock(&reg_lock);
	for (struct soft_ctx *x = reg_head; x; x = x->reg_next) {
		if (x != sc || x->serial != serial)
			continue;
		/* Under the registry lock: the context (its evfd) stays open. */
		if (atomic_load_explicit(&x->n_polled, memory_order_relaxed)) {
			atomic_store(&x->handback, true);
			soft_kick(x);
		}
		break;
	}
	pthread_mutex_unlock(&reg_lock);
}

int soft_context_open(struct rv_context *ctx, const rv_context_attr *attr)
{
	static const char *const fn = "rv_context_new";
	struct sockaddr_storage ss;
	socklen_t sl;
	struct soft_ctx *sc;
	int one = 1, err;

	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return rv_err(ENOMEM, fn, "out of memory for the soft0 context");
	sc->ctx = ctx;
	sc->lfd = sc->evfd = sc->bell_fd = sc->hold_fd = sc->epfd = -1;
	sc->evq.fd = -1;
	sc->timeout_ms = SOFT_CONNECT_TIMEOUT_MS;
	sc->spin_us = env_long("RVERBS_SOFT_SPIN_US",
			       sysconf(_SC_NPROCESSORS_ONLN) >= SOFT_SPIN_MIN_CPUS ? SOFT_SPIN_US : 0, 0, 1000000);
	sc->poll_progress = env_long("RVERBS_SOFT_POLL_PROGRESS", 1, 0, 1) != 0;
	sc->wait_spin_ns = (uint32_t)env_long("RVERBS_SOFT_WAIT_SPIN_US", SOFT_WAIT_SPIN_US, 0, 1000000) * 1000u;
	sc->wait_recv_ms = (int)env_long("RVERBS_SOFT_WAIT_RECV_MS", SOFT_WAIT_RECV_MS, 0, 600000);
	sc->shm_enabled = env_long("RVERBS_SOFT_SHM", 1, 0, 1) != 0;
	sc->shm_ring = env_long("RVERBS_SOFT_SHM_RING", 1, 0, 1) != 0;
	sc->shm_direct = env_long("RVERBS_SOFT_SHM_DIRECT", 1, 0, 1) != 0;
	if (getenv("RVERBS_SOFT_TIMEOUT_MS")) {
		long v = strtol(getenv("RVERBS_SOFT_TIMEOUT_MS"), NULL, 10);
		if (v > 0 && v <= 3600000)
			sc->timeout_ms = v;
	}
	if (soft_fault_env(sc) < 0) {
		free(sc);
		return -EINVAL;
	}
	soft_context_options(sc, attr);
	err = soft_context_secret(sc, attr);
	if (err < 0) {
		free(sc);
		return err;
	}
	soft_lock_init(&sc->lock);
	if (soft_mr_table_init(sc) < 0) {
		free(sc);
		return rv_err(ENOMEM, fn, "out of memory for the soft0 MR table");
	}
	if (soft_event_init(sc) < 0) {
		ctx_free(sc);
		return rv_err(EMFILE, fn, "cannot create soft0's event queue; check the open-files limit (ulimit -n)");
	}

	sc->family = parse_addr(attr->listen_addr, &ss, &sl, sc->gid);
	if (sc->family < 0) {
		ctx_free(sc);
		return rv_err(EINVAL, fn, "listen_addr \"%s\" is not a numeric IPv4 or IPv6 address",
			      attr->listen_addr);
	}
	sc->lfd = socket(sc->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sc->lfd < 0) {
		err = errno;
		ctx_free(sc);
		return rv_err(err, fn, "socket() for the soft0 listener failed: %s", strerror(err));
	}
	setsockopt(sc->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(sc->lfd, (struct sockaddr *)&ss, sl) < 0 || listen(sc->lfd, SOMAXCONN) < 0) {
		err = errno;
		ctx_free(sc);
		return rv_err(EADDRNOTAVAIL, fn, "soft0 cannot listen on %s: %s; pass an address of this host in rv_context_attr.listen_addr",
			      attr->listen_addr, strerror(err));
	}
	sl = sizeof(ss);
	getsockname(sc->lfd, (struct sockaddr *)&ss, &sl);
	sc->port = ntohs(sc->family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					       : ((struct sockaddr_in6 *)&ss)->sin6_port);
	/* UD (ud.c): a UDP socket with the same port number, so that the LID
	 * names both; if another program holds it for UDP, listen elsewhere. */
	err = soft_ud_open(sc, &ss, sl);
	for (int tries = 0; err == -EADDRINUSE && tries < 16; tries++)
		err = relisten(sc, &ss, &sl) < 0 ? -errno : soft_ud_open(sc, &ss, sl);
	if (err < 0) {
		ctx_free(sc);
		return err == -EADDRINUSE || !rv_err_is_set()
			       ? rv_err(-err, fn, "soft0 found no port free for both TCP and UDP on %s",
					attr->listen_addr)
			       : err;
	}

	sc->epfd = epoll_create1(EPOLL_CLOEXEC);
	sc->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	sc->bell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	sc->hold_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	atomic_store(&sc->bell_on, true);
	if (sc->epfd < 0 || sc->evfd < 0 || sc->bell_fd < 0 || sc->hold_fd < 0 ||
	    epoll_add(sc->epfd, sc->lfd, &tag_listener) < 0 || epoll_add(sc->epfd, sc->evfd, &tag_eventfd) < 0 ||
	    epoll_add(sc->epfd, sc->bell_fd, &tag_bell) < 0 || epoll_add(sc->epfd, sc->hold_fd, &tag_hold) < 0 ||
	    (sc->ud && epoll_add(sc->epfd, soft_ud_fd(sc), sc->ud) < 0) ||
	    (soft_ud_roce_fd(sc) >= 0 && epoll_add(sc->epfd, soft_ud_roce_fd(sc), sc->ud) < 0)) {
		err = errno;
		ctx_free(sc);
		return rv_err(err, fn, "epoll/eventfd setup failed: %s; check the open-files limit (ulimit -n)",
			      strerror(err));
	}
	ctx->drv_ctx = sc;
	err = pthread_create(&sc->thread, NULL, progress, sc);
	if (err) {
		ctx->drv_ctx = NULL;
		ctx_free(sc);
		return rv_err(err, fn, "cannot start the soft0 progress thread: %s", strerror(err));
	}
	sc->thread_started = true;
	reg_add(sc);
	return 0;
}

int soft_context_close(struct rv_context *ctx)
{
	struct soft_ctx *sc = ctx->drv_ctx;

	if (!sc)
		return 0;
	reg_del(sc);
	soft_lock_take(&sc->lock);
	sc->stop = true;
	soft_lock_give(&sc->lock);
	soft_kick(sc);
	if (sc->thread_started)
		pthread_join(sc->thread, NULL);
	/* QPs were destroyed first by the facade; what is left are connections. */
	while (sc->conns) {
		struct soft_conn *c = sc->conns;
		sc->conns = c->next;
		if (c->qp)
			c->qp->conn = NULL;
		soft_conn_free(c);
	}
	free_zombies(sc, true);
	ctx_free(sc);
	ctx->drv_ctx = NULL;
	return 0;
}

/*
 * Thread domains. The owner's promise (the objects of a parent domain bound
 * to the TD are used from one thread at a time) does not let soft0 drop a
 * lock: each QP's lock guards it against soft0's own progress thread, which
 * no promise of the owner's covers (docs/extended-verbs.md, "Thread and
 * parent domains"). So a TD is accepted, its ownership kept by the facade
 * (rv_context_dump shows it), and it changes nothing in soft0.
 */
int soft_td_alloc(struct rv_td *td)
{
	td->drv_td = td->ctx->drv_ctx;
	return 0;
}

int soft_td_dealloc(struct rv_td *td)
{
	td->drv_td = NULL;
	return 0;
}
