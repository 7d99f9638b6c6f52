#!/usr/bin/python3
"""Per-operation cost of a post+poll round trip from Python, against the same
loop in C, through the same librverbs.

    /usr/bin/python3 bench/python-overhead.py [--build BUILDDIR] [--device mock|soft0|both]
                                              [--iters N] [--batch B] [--json]

One operation = post one signalled RDMA WRITE of 8 bytes, then poll the CQ
until its completion arrives. Loops, each timed as the best of 3 runs:

  C            rv_qp_write + rv_cq_poll                 (compiled here with cc -O2)
  C batch      rv_qp_post_send of B WRs + rv_cq_poll until B completions, per WR
  py lib       rverbs.lib.rv_qp_write + lib.rv_cq_poll  (cffi ABI calls, no layer)
  py           qp.write(sge, ...) + cq.poll_raw()       (the Pythonic layer)
  py objects   qp.post_send([SendWR]) + cq.poll() -> [WC] (pyverbs-style objects)
  py batch     qp.post_send(prebuilt rv_send_wr[B]) + cq.poll_raw(B), per WR

With python3-pyverbs installed, it also times building one SGE and one send
WR with pyverbs and with rverbs: pyverbs needs an RDMA device for anything
more, so without hardware that is all of pyverbs that can be measured.

Devices:
  mock   librverbs + the mock driver of tests/mock-driver.c (built as
         bindings/python/librverbs-pymock.so): posts are recorded and every
         poll returns canned completions at once, so the time is the facade
         plus the binding and nothing else: the difference Python - C is the
         binding's cost per operation.
  soft0  two connected RC QPs on the software device in this process; the
         time includes soft0's own work (TCP loopback, progress thread), the
         same for C and Python, so only the difference is the binding's.

The build directory needs the library, the generated Python module and (for
mock) librverbs-pymock.so: `ninja -C BUILDDIR`.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)

C_PROGRAM = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rverbs/rverbs.h>

/* From librverbs-pymock.so only; the soft0 run never calls them. */
__attribute__((weak)) int rvmock_device_new(const char *name, rv_device **ret_dev);
__attribute__((weak)) void rvmock_set_completions(int n, uint32_t status);
__attribute__((weak)) void rvmock_reset(void);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CHECK(x) do { int rc_ = (x); if (rc_ < 0) { \
	fprintf(stderr, "%s: %d: %s\n", #x, rc_, rv_error_last()); exit(1); } } while (0)

struct side { rv_context *ctx; rv_pd *pd; rv_cq *cq; rv_qp *qp; rv_mr *mr; rv_endpoint peer; };

static void side_open(rv_device *dev, struct side *s)
{
	rv_qp_init_attr qa = {.mask = RV_QP_INIT_ATTR_SEND_CQ};
	CHECK(rv_context_new(dev, NULL, &s->ctx));
	CHECK(rv_pd_new(s->ctx, NULL, &s->pd));
	CHECK(rv_cq_new(s->ctx, NULL, &s->cq));
	qa.send_cq = s->cq;
	CHECK(rv_qp_new(s->pd, &qa, &s->qp));
	CHECK(rv_mr_alloc(s->pd, 65536, RV_ACCESS_ALL_REMOTE, NULL, &s->mr));
}

static void *connect_thread(void *arg)
{
	struct side *s = arg;
	CHECK(rv_qp_connect(s->qp, &s->peer));
	return NULL;
}

int main(int argc, char **argv)
{
	int mock = strcmp(argv[1], "mock") == 0;
	long iters = atol(argv[2]);
	int batch = atoi(argv[3]);
	struct side a = {0}, b = {0};
	rv_device *dev;
	rv_wc wc[64];
	double best1 = 1e9, bestb = 1e9;

	if (mock) {
		rvmock_reset();
		CHECK(rvmock_device_new("mock0", &dev));
	} else {
		CHECK(rv_device_find("soft0", &dev));
	}
	side_open(dev, &a);
	if (mock) {
		/* The mock accepts any transition: connect the QP to itself. */
		CHECK(rv_qp_endpoint(a.qp, &a.peer));
		CHECK(rv_qp_connect(a.qp, &a.peer));
		b = a;
	} else {
		pthread_t t;
		side_open(dev, &b);
		CHECK(rv_qp_endpoint(b.qp, &a.peer));
		CHECK(rv_qp_endpoint(a.qp, &b.peer));
		pthread_create(&t, NULL, connect_thread, &b);
		CHECK(rv_qp_connect(a.qp, &a.peer));
		pthread_join(t, NULL);
	}
	rv_sge sge = {(uintptr_t)rv_mr_addr(a.mr), 8, rv_mr_lkey(a.mr)};
	uint64_t raddr = (uintptr_t)rv_mr_addr(b.mr);
	uint32_t rkey = rv_mr_rkey(b.mr);
	rv_send_wr wrs[64];
	memset(wrs, 0, sizeof(wrs));
	for (int i = 0; i < batch; i++) {
		wrs[i].wr_id = (uint64_t)i;
		wrs[i].sg_list = &sge;
		wrs[i].num_sge = 1;
		wrs[i].opcode = RV_WR_RDMA_WRITE;
		wrs[i].send_flags = RV_SEND_SIGNALED;
		wrs[i].remote_addr = raddr;
		wrs[i].rkey = rkey;
	}
	for (int rep = 0; rep < 3; rep++) {
		if (mock)
			rvmock_set_completions(1, 0);
		double t0 = now();
		for (long i = 0; i < iters; i++) {
			CHECK(rv_qp_write(a.qp, &sge, raddr, rkey, (uint64_t)i));
			int n;
			while ((n = rv_cq_poll(a.cq, wc, 1)) == 0)
				;
			if (n < 0 || wc[0].status != RV_WC_SUCCESS) { fprintf(stderr, "wc error\n"); return 1; }
		}
		double t1 = now();
		if ((t1 - t0) / iters < best1)
			best1 = (t1 - t0) / iters;
		if (mock)
			rvmock_set_completions(batch, 0);
		long rounds = iters / batch;
		t0 = now();
		for (long r = 0; r < rounds; r++) {
			CHECK(rv_qp_post_send(a.qp, wrs, (size_t)batch, NULL));
			int got = 0;
			while (got < batch) {
				int n = rv_cq_poll(a.cq, wc, batch - got);
				if (n < 0) { fprintf(stderr, "poll error\n"); return 1; }
				got += n;
			}
		}
		t1 = now();
		if ((t1 - t0) / (rounds * batch) < bestb)
			bestb = (t1 - t0) / (rounds * batch);
	}
	printf("%.4f %.4f\n", best1 * 1e6, bestb * 1e6);
	rv_context_unref(a.ctx);
	if (!mock)
		rv_context_unref(b.ctx);
	return 0;
}
"""


def source_dir(build):
    """The source tree the build directory was configured from."""
    try:
        with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
            return json.load(f)["directories"]["source"]
    except (OSError, KeyError, ValueError):
        return SRC


def build_c(build, lib_path):
    tmp = tempfile.mkdtemp(prefix="rverbs-pybench-")
    src = os.path.join(tmp, "loop.c")
    exe = os.path.join(tmp, "loop")
    with open(src, "w") as f:
        f.write(C_PROGRAM)
    subprocess.run(["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", "-I", os.path.join(source_dir(build), "include"),
                    "-I", os.path.join(build, "include"), src, lib_path,
                    "-Wl,-rpath," + os.path.dirname(lib_path), "-lpthread", "-o", exe],
                   check=True)
    return exe


def best_of(fn, iters, reps=3):
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(iters)
        dt = (time.perf_counter() - t0) / iters
        best = dt if best is None else min(best, dt)
    return best * 1e6


def python_loops(rverbs, device, iters, batch, mocklib):
    from rverbs import ffi, lib

    ctx_a = rverbs.Context(device)
    pd_a = rverbs.PD(ctx_a)
    cq = rverbs.CQ(ctx_a, batch=max(batch, 16))
    qp = rverbs.QP(pd_a, cq)
    mr_a = rverbs.MR(pd_a, 65536)
    keep = [ctx_a]
    if mocklib is not None:
        qp.connect(qp.endpoint())  # the mock accepts any transition
        mr_b = mr_a
    else:
        ctx_b = rverbs.Context(device)
        pd_b = rverbs.PD(ctx_b)
        cq_b = rverbs.CQ(ctx_b)
        qp_b = rverbs.QP(pd_b, cq_b)
        mr_b = rverbs.MR(pd_b, 65536)
        keep += [ctx_b, qp_b]
        ea, eb = qp.endpoint(), qp_b.endpoint()
        t = threading.Thread(target=qp_b.connect, args=(ea,))
        t.start()
        qp.connect(eb)
        t.join()
    sge = mr_a.sge(0, 8)
    raddr, rkey = mr_b.addr, mr_b.rkey

    def set_completions(n):
        if mocklib is not None:
            mocklib.rvmock_set_completions(n, 0)

    # The cffi functions, looked up once, as a hot loop would.
    rv_qp_write, rv_cq_poll = lib.rv_qp_write, lib.rv_cq_poll
    h_qp, h_cq = qp.handle, cq.handle
    wc = ffi.new("rv_wc[]", 64)

    def py_lib(n):
        for i in range(n):
            if rv_qp_write(h_qp, sge, raddr, rkey, i) < 0:
                raise RuntimeError(ffi.string(lib.rv_error_last()))
            while True:
                k = rv_cq_poll(h_cq, wc, 1)
                if k:
                    break
            if k < 0 or wc[0].status:
                raise RuntimeError("completion error")

    def py_layer(n):
        write, poll_raw = qp.write, cq.poll_raw
        for i in range(n):
            write(sge, raddr, rkey, i)
            while True:
                k, wcs = poll_raw(1)
                if k:
                    break
            if wcs[0].status:
                raise RuntimeError("completion error")

    SendWR = rverbs.SendWR
    WRITE, SIGNALED = rverbs.RV_WR_RDMA_WRITE, rverbs.RV_SEND_SIGNALED

    def py_objects(n):
        for i in range(n):
            qp.post_send([SendWR(i, WRITE, [sge], SIGNALED, remote_addr=raddr, rkey=rkey)])
            while True:
                got = cq.poll(1)
                if got:
                    break
            if not got[0].ok:
                raise RuntimeError("completion error")

    wrs = ffi.new("rv_send_wr[]", batch)
    for i in range(batch):
        w = wrs[i]
        w.wr_id, w.sg_list, w.num_sge = i, sge, 1
        w.opcode, w.send_flags, w.remote_addr, w.rkey = WRITE, SIGNALED, raddr, rkey

    def py_batch(n):
        post, poll_raw = qp.post_send, cq.poll_raw
        for _ in range(n // batch):
            post(wrs, batch)
            got = 0
            while got < batch:
                k, _w = poll_raw(batch - got)
                got += k
        return n // batch * batch

    res = {}
    set_completions(1)
    res["py lib"] = best_of(py_lib, iters)
    res["py"] = best_of(py_layer, iters)
    res["py objects"] = best_of(py_objects, max(1000, iters // 4))
    set_completions(batch)
    res["py batch"] = best_of(py_batch, iters // batch * batch)
    for obj in keep:
        obj.close()
    return res


def pyverbs_construction(build, iters):
    """Building one SGE and one RDMA WRITE work request: pyverbs (if installed)
    next to rverbs. pyverbs needs an RDMA device for anything more (none here),
    so only this part of its per-operation cost is measurable without hardware."""
    try:
        import pyverbs.wr as pwr
        import pyverbs.enums as penums
    except ImportError:
        return None
    res = {}
    sge = pwr.SGE(0x1000, 8, 5)

    def p_sge(n):
        for _ in range(n):
            pwr.SGE(0x1000, 8, 5)

    def p_wr(n):
        for i in range(n):
            wr = pwr.SendWR(wr_id=i, opcode=penums.IBV_WR_RDMA_WRITE, num_sge=1, sg=[sge])
            wr.set_wr_rdma(5, 0x2000)

    res["pyverbs SGE"] = best_of(p_sge, iters)
    res["pyverbs SendWR"] = best_of(p_wr, iters)
    return res


def main():
    ap = argparse.ArgumentParser(description="Python vs C per-operation cost of post+poll")
    ap.add_argument("--build", default=os.environ.get("RVERBS_BUILD", os.path.join(SRC, "build")),
                    help="meson build directory (default: $RVERBS_BUILD or ./build)")
    ap.add_argument("--device", choices=["mock", "soft0", "both"], default="both")
    ap.add_argument("--iters", type=int, default=200000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    real_lib = os.path.join(build, "lib", "librverbs.so")
    mock_lib = os.path.join(build, "bindings", "python", "librverbs-pymock.so")
    devices = ["mock", "soft0"] if args.device == "both" else [args.device]

    results = {}
    for dev in devices:
        lib_path = mock_lib if dev == "mock" else real_lib
        if not os.path.exists(lib_path):
            print("skip %s: %s not built" % (dev, lib_path), file=sys.stderr)
            continue
        iters = args.iters if dev == "mock" else max(2000, args.iters // 10)
        exe = build_c(build, lib_path)
        out = subprocess.run([exe, dev, str(iters), str(args.batch)], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
        c_single, c_batch = float(out[0]), float(out[1])
        # The Python side runs in a child so each device gets its own library.
        code = ("import json, sys; sys.path[:0] = %r; import os\n"
                "import rverbs\n"
                "sys.path.insert(0, %r)\n"
                "from importlib import import_module\n"
                "bench = import_module('python-overhead')\n"
                "mocklib = None\n"
                "if %r == 'mock':\n"
                "    rverbs.ffi.cdef('int rvmock_device_new(const char *, rv_device **);'\n"
                "                    'void rvmock_set_completions(int, uint32_t); void rvmock_reset(void);')\n"
                "    mocklib = rverbs.ffi.dlopen(os.environ['RVERBS_LIBRARY'])\n"
                "    mocklib.rvmock_reset()\n"
                "    out = rverbs.ffi.new('rv_device **')\n"
                "    assert mocklib.rvmock_device_new(b'mock0', out) == 0\n"
                "    dev = rverbs.Device(_ptr=out[0])\n"
                "else:\n"
                "    dev = rverbs.Device('soft0')\n"
                "print(json.dumps(bench.python_loops(rverbs, dev, %d, %d, mocklib)))\n"
                % ([os.path.join(build, "bindings", "python"),
                    os.path.join(source_dir(build), "bindings", "python")],
                   HERE, dev, iters, args.batch))
        env = dict(os.environ, RVERBS_LIBRARY=lib_path, PYTHONDONTWRITEBYTECODE="1")
        py = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                            stdout=subprocess.PIPE, universal_newlines=True)
        r = json.loads(py.stdout.strip().splitlines()[-1])
        r["C"], r["C batch"] = c_single, c_batch
        results[dev] = r

    pv = pyverbs_construction(build, max(1000, args.iters // 4))
    if pv is not None:
        code = ("import sys, os; sys.path[:0] = %r\n"
                "import rverbs, time\n"
                "def best(fn, n):\n"
                "    b = None\n"
                "    for _ in range(3):\n"
                "        t = time.perf_counter(); fn(n); d = (time.perf_counter() - t) / n\n"
                "        b = d if b is None else min(b, d)\n"
                "    return b * 1e6\n"
                "s = rverbs.sge(0x1000, 8, 5)\n"
                "def f_sge(n):\n"
                "    for _ in range(n): rverbs.sge(0x1000, 8, 5)\n"
                "def f_wr(n):\n"
                "    for i in range(n): rverbs.SendWR(i, 0, [s], 2, remote_addr=0x2000, rkey=5)\n"
                "print(best(f_sge, %d), best(f_wr, %d))\n"
                % ([os.path.join(build, "bindings", "python"),
                    os.path.join(source_dir(build), "bindings", "python")],
                   max(1000, args.iters // 4), max(1000, args.iters // 4)))
        env = dict(os.environ, RVERBS_LIBRARY=real_lib, PYTHONDONTWRITEBYTECODE="1")
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
        pv["rverbs sge()"], pv["rverbs SendWR"] = float(out[0]), float(out[1])
        results["construction"] = pv

    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print("post+poll round trip, µs per operation (best of 3; batch = %d WRs per post)"
          % args.batch)
    for dev, r in results.items():
        if dev == "construction":
            print("\nbuilding one SGE and one RDMA WRITE WR (no device needed; pyverbs %s):"
                  % "installed")
            for name, v in r.items():
                print("  %-15s %8.3f" % (name, v))
            continue
        print("\n%s:" % dev)
        rows = [("C", "C"), ("py lib", "C"), ("py", "C"), ("py objects", "C"),
                ("C batch", "C batch"), ("py batch", "C batch")]
        for name, base in rows:
            extra = "" if name == base else "   (+%.3f over %s)" % (r[name] - r[base], base)
            print("  %-11s %8.3f%s" % (name, r[name], extra))
    return 0


if __name__ == "__main__":
    sys.exit(main())
