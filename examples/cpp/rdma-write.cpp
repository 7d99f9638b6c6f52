// rdma-write (C++): one RDMA WRITE between two contexts of this process, with
// the header-only C++ binding <rverbs/rverbs.hpp>.
//
// The target registers a buffer for remote writes and advertises it in its
// endpoint; the initiator writes a message into it with one RDMA WRITE. The
// endpoints travel as packed bytes, as they would over any out-of-band channel
// between two processes or hosts. Resources are released by their owners'
// destructors, in any order.
//
//   rdma-write-cpp [MESSAGE]      (RVERBS_DEVICE=name picks the device)
#include <rverbs/rverbs.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace rv = rverbs;

struct side {
	rv::context ctx;
	rv::pd pd;
	rv::cq cq;
	rv::qp qp;
	rv::mr mr;

	side(const rv::device &dev, uint32_t access)
		: ctx(rv::context::open(dev)), pd(rv::pd::create(ctx)), cq(rv::cq::create(ctx)),
		  qp(rv::qp::create(pd, cq)), mr(rv::mr::alloc(pd, 4096, access))
	{
	}
};

int main(int argc, char **argv)
{
	std::string msg = argc > 1 ? argv[1] : "Hello from rverbs.hpp: this text arrived by RDMA WRITE.";
	try {
		rv::device dev = rv::device::default_device();
		side target(dev, RV_ACCESS_LOCAL_WRITE | RV_ACCESS_REMOTE_WRITE);
		side initiator(dev, RV_ACCESS_LOCAL_WRITE);
		if (msg.size() + 1 > target.mr.length()) {
			std::fprintf(stderr, "message too long\n");
			return 2;
		}

		// The out-of-band exchange: packed endpoints, the target's one with its buffer.
		rv_endpoint t = target.qp.endpoint();
		t.mask |= RV_ENDPOINT_MR;
		t.mr_addr = reinterpret_cast<uintptr_t>(target.mr.addr());
		t.mr_length = target.mr.length();
		t.mr_rkey = target.mr.rkey();
		std::vector<uint8_t> to_initiator = rv::pack(t);
		std::vector<uint8_t> to_target = rv::pack(initiator.qp.endpoint());

		// Both sides connect at once (each would run in its own process).
		std::error_code target_ec;
		std::thread th([&] { target.qp.connect(rv::unpack(to_target), target_ec); });
		rv_endpoint peer = rv::unpack(to_initiator);
		initiator.qp.connect(peer);
		th.join();
		if (target_ec)
			throw rv::error(target_ec.value(), "rv_qp_connect", rv::last_error());

		std::memcpy(initiator.mr.addr(), msg.c_str(), msg.size() + 1);
		initiator.qp.write(initiator.mr.sge(0, msg.size() + 1), peer.mr_addr, peer.mr_rkey, 1);

		rv_wc wc[1];
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
		while (initiator.cq.poll(wc) == 0) {
			if (std::chrono::steady_clock::now() > deadline) {
				std::fprintf(stderr, "no completion within 5 s\n");
				return 1;
			}
			std::this_thread::yield();
		}
		if (wc[0].status != RV_WC_SUCCESS) {
			std::fprintf(stderr, "RDMA WRITE failed: %s (%s)\n", rv::wc_status_str(wc[0].status),
				     rv::wc_status_hint(wc[0].status));
			return 1;
		}
		std::printf("target received by RDMA WRITE on %s: \"%s\"\n", dev.name(),
			    static_cast<const char *>(target.mr.addr()));
		return 0;
	} catch (const rv::error &e) {
		std::fprintf(stderr, "%s\n", e.what());
		return 1;
	}
}
