/**
 * @file rverbs.hpp
 * @brief Header-only C++17 bindings of rverbs: RAII owners over the C handles.
 *
 * Installed as <rverbs/rverbs.hpp>. Nothing here adds behaviour to the C API;
 * it only changes how ownership and errors are spelled:
 *
 * - Owners: rverbs::device, context, comp_channel, pd, xrcd, ah, mr, mw, cq, srq,
 *   qp, listener, conn, pool, mr_cache each own one reference on their C
 *   handle. Copying takes another reference (rv_X_ref), moving
 *   transfers it, destruction drops it (rv_X_unref). close() destroys the
 *   resource now and, as in C, everything that depends on it; every copy then
 *   sees a closed handle. get() gives the C handle for calls made directly.
 * - Errors, caller's choice: every fallible call exists twice, one that throws
 *   rverbs::error (a std::system_error carrying the errno in code() and the
 *   rv_error_last() message in detail()), and one that takes a trailing
 *   std::error_code& and is noexcept. A handle closed explicitly or by a
 *   cascade reports RV_ECLOSED (EBADFD); rverbs::is_closed(ec) tests for it.
 * - Views: rverbs::span<T>, a pointer and a length (C++17 has no std::span),
 *   for work-request and completion arrays and scatter/gather lists.
 *
 * Thread safety is the C library's: handles may be shared between threads;
 * closing one while another thread uses it is a caller race.
 */
#ifndef RVERBS_HPP
#define RVERBS_HPP

#include <rverbs/rverbs.h>
#include <rverbs/conn.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace rverbs {

// ---- views ----------------------------------------------------------------

/** A non-owning view of a contiguous array: a pointer and a length. */
template <class T>
class span {
public:
	using element_type = T;
	using value_type = std::remove_cv_t<T>;
	using size_type = std::size_t;
	using iterator = T *;

	constexpr span() noexcept = default;
	constexpr span(T *data, std::size_t size) noexcept : data_(data), size_(size) {}
	template <std::size_t N>
	constexpr span(T (&arr)[N]) noexcept : data_(arr), size_(N) {}
	/** From any contiguous container with data() and size(): std::vector, std::array, span. */
	template <class C,
		  class = std::enable_if_t<
			  !std::is_array<std::remove_reference_t<C>>::value &&
			  std::is_convertible<decltype(std::declval<C &>().data()), T *>::value>>
	constexpr span(C &&c) noexcept(noexcept(c.data()) && noexcept(c.size()))
		: data_(c.data()), size_(c.size())
	{
	}

	constexpr T *data() const noexcept { return data_; }
	constexpr std::size_t size() const noexcept { return size_; }
	constexpr bool empty() const noexcept { return size_ == 0; }
	constexpr T *begin() const noexcept { return data_; }
	constexpr T *end() const noexcept { return data_ + size_; }
	constexpr T &operator[](std::size_t i) const noexcept { return data_[i]; }
	/** The elements [offset, offset + count), clamped to the view. */
	constexpr span subspan(std::size_t offset, std::size_t count = SIZE_MAX) const noexcept
	{
		if (offset > size_)
			offset = size_;
		if (count > size_ - offset)
			count = size_ - offset;
		return span(data_ + offset, count);
	}
	constexpr span first(std::size_t count) const noexcept { return subspan(0, count); }

private:
	T *data_ = nullptr;
	std::size_t size_ = 0;
};

// ---- errors ---------------------------------------------------------------

/** A failed rverbs call: code() is the errno (generic category), detail() rv_error_last(). */
class error : public std::system_error {
public:
	error(int err, const char *func, std::string detail)
		: std::system_error(err, std::generic_category(),
				    std::string(func) + (detail.empty() ? "" : ": " + detail)),
		  func_(func), detail_(std::move(detail))
	{
	}
	/** The C function that failed. */
	const char *func() const noexcept { return func_; }
	/** The rv_error_last() message read right after the failure. */
	const std::string &detail() const noexcept { return detail_; }
	/** True when the handle was closed (RV_ECLOSED, EBADFD). */
	bool closed() const noexcept { return code().value() == RV_ECLOSED; }

private:
	const char *func_;
	std::string detail_;
};

/** True when @p ec says a handle was closed (RV_ECLOSED, EBADFD). */
inline bool is_closed(const std::error_code &ec) noexcept
{
	return ec.value() == RV_ECLOSED && ec.category() == std::generic_category();
}

/** The message of the last failure in this thread (rv_error_last()). */
inline std::string last_error() { return rv_error_last(); }
/** Forget this thread's last error (rv_error_clear); last_error() is then "". */
inline void error_clear() noexcept { rv_error_clear(); }

namespace detail {

inline int check(int rc, const char *func)
{
	if (rc < 0)
		throw error(-rc, func, rv_error_last());
	return rc;
}

inline int check(int rc, std::error_code &ec) noexcept
{
	if (rc < 0)
		ec.assign(-rc, std::generic_category());
	else
		ec.clear();
	return rc;
}

template <class T>
struct traits;

#define RVERBS_HPP_TRAITS(T, name)                                                          \
	template <>                                                                         \
	struct traits<T> {                                                                  \
		static T *ref(T *p) noexcept { return rv_##name##_ref(p); }                 \
		static void unref(T *p) noexcept { rv_##name##_unref(p); }                  \
		static int close(T *p) noexcept { return rv_##name##_close(p); }            \
		static constexpr const char *close_name = "rv_" #name "_close";             \
	};
RVERBS_HPP_TRAITS(rv_device, device)
RVERBS_HPP_TRAITS(rv_context, context)
RVERBS_HPP_TRAITS(rv_pd, pd)
RVERBS_HPP_TRAITS(rv_td, td)
RVERBS_HPP_TRAITS(rv_mr, mr)
RVERBS_HPP_TRAITS(rv_cq, cq)
RVERBS_HPP_TRAITS(rv_qp, qp)
RVERBS_HPP_TRAITS(rv_ah, ah)
RVERBS_HPP_TRAITS(rv_srq, srq)
RVERBS_HPP_TRAITS(rv_xrcd, xrcd)
RVERBS_HPP_TRAITS(rv_listener, listener)
RVERBS_HPP_TRAITS(rv_conn, conn)
RVERBS_HPP_TRAITS(rv_pool, pool)
RVERBS_HPP_TRAITS(rv_mw, mw)
RVERBS_HPP_TRAITS(rv_comp_channel, comp_channel)
#undef RVERBS_HPP_TRAITS

/* The registration cache has no close of its own: handle<rv_mr_cache>::close()
 * is never instantiated. */
template <>
struct traits<rv_mr_cache> {
	static rv_mr_cache *ref(rv_mr_cache *p) noexcept { return rv_mr_cache_ref(p); }
	static void unref(rv_mr_cache *p) noexcept { rv_mr_cache_unref(p); }
};

} // namespace detail

/** Tag: take over a reference the caller already owns. */
struct adopt_t {
	explicit adopt_t() = default;
};
inline constexpr adopt_t adopt{};

// ---- the owner ------------------------------------------------------------

/** Owner of one reference on a C handle: copy = ref, move = transfer. */
template <class T>
class handle {
	using tr = detail::traits<T>;

public:
	using element_type = T;

	handle() noexcept = default;
	/** Take over @p p's reference (from rv_X_new or rv_X_ref). */
	handle(T *p, adopt_t) noexcept : p_(p) {}
	/** Take a new reference on @p p (a borrowed handle). */
	static handle borrow(T *p) noexcept { return handle(tr::ref(p), adopt); }

	handle(const handle &o) noexcept : p_(tr::ref(o.p_)) {}
	handle(handle &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
	handle &operator=(const handle &o) noexcept
	{
		handle tmp(o);
		swap(tmp);
		return *this;
	}
	handle &operator=(handle &&o) noexcept
	{
		handle tmp(std::move(o));
		swap(tmp);
		return *this;
	}
	~handle() { tr::unref(p_); }

	void swap(handle &o) noexcept { std::swap(p_, o.p_); }
	T *get() const noexcept { return p_; }
	explicit operator bool() const noexcept { return p_ != nullptr; }
	/** Give up the reference without dropping it. */
	T *release() noexcept { return std::exchange(p_, nullptr); }
	/** Drop the reference now (rv_X_unref); the owner becomes empty. */
	void reset() noexcept { tr::unref(std::exchange(p_, nullptr)); }

	/**
	 * Destroy the resource now, after everything that depends on it (rv_X_close).
	 * The reference stays: the handle reports RV_ECLOSED until it is dropped.
	 */
	void close() { detail::check(tr::close(p_), tr::close_name); }
	void close(std::error_code &ec) noexcept { detail::check(tr::close(p_), ec); }

	friend bool operator==(const handle &a, const handle &b) noexcept { return a.p_ == b.p_; }
	friend bool operator!=(const handle &a, const handle &b) noexcept { return a.p_ != b.p_; }

protected:
	T *p_ = nullptr;
};

// A creating call in both styles: `make(...)` throws, `make(..., ec)` does not.
#define RVERBS_HPP_CREATE(Owner, T, func, ...)                                           \
	{                                                                                \
		T *out = nullptr;                                                        \
		detail::check(func(__VA_ARGS__, &out), #func);                           \
		return Owner(out, adopt);                                                \
	}
#define RVERBS_HPP_CREATE_EC(Owner, T, func, ...)                                        \
	{                                                                                \
		T *out = nullptr;                                                        \
		if (detail::check(func(__VA_ARGS__, &out), ec) < 0)                     \
			return Owner();                                                  \
		return Owner(out, adopt);                                                \
	}

// ---- library-wide ---------------------------------------------------------

/** The library's version at run time, "MAJOR.MINOR.PATCH" (rv_version). */
inline const char *version() noexcept { return rv_version(); }
/** The same as MAJOR * 10000 + MINOR * 100 + PATCH (rv_version_number). */
inline uint32_t version_number() noexcept { return rv_version_number(); }
/**
 * Install a log handler (rv_set_log_handler; nullptr removes it). rverbs
 * never writes to stderr itself. @p fn may be called from any thread,
 * including the software device's, and must not throw.
 */
inline void set_log_handler(rv_log_fn fn, void *user = nullptr) noexcept
{
	rv_set_log_handler(fn, user);
}
/** The most verbose level passed to the handler (rv_set_log_level; default RV_LOG_WARN). */
inline void set_log_level(rv_log_level level)
{
	detail::check(rv_set_log_level(level), "rv_set_log_level");
}
inline void set_log_level(rv_log_level level, std::error_code &ec) noexcept
{
	detail::check(rv_set_log_level(level), ec);
}

class device : public handle<rv_device> {
public:
	using handle::handle;
	device() noexcept = default;
	device(handle<rv_device> h) noexcept : handle(std::move(h)) {}

	/** The default device (RVERBS_DEVICE, else the first active one, else soft0). */
	static device default_device()
	{
		rv_device *out = nullptr;
		detail::check(rv_device_default(&out), "rv_device_default");
		return device(out, adopt);
	}
	static device find(const char *name) RVERBS_HPP_CREATE(device, rv_device, rv_device_find, name)
	static device find(const char *name, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(device, rv_device, rv_device_find, name)
	static device default_device(std::error_code &ec) noexcept
	{
		rv_device *out = nullptr;
		if (detail::check(rv_device_default(&out), ec) < 0)
			return device();
		return device(out, adopt);
	}
	/** Every device. */
	static std::vector<device> list()
	{
		std::error_code ec;
		auto v = list(ec);
		if (ec)
			throw error(ec.value(), "rv_device_list", rv_error_last());
		return v;
	}
	static std::vector<device> list(std::error_code &ec) noexcept
	{
		rv_device **devs = nullptr;
		size_t n = 0;
		std::vector<device> v;
		if (detail::check(rv_device_list(&devs, &n), ec) < 0)
			return v;
		try {
			v.reserve(n);
		} catch (...) {
			rv_device_list_free(devs);
			ec = std::make_error_code(std::errc::not_enough_memory);
			return v;
		}
		for (size_t i = 0; i < n; i++)
			v.push_back(device::borrow(devs[i]));
		rv_device_list_free(devs);
		return v;
	}

	/** The name, or nullptr for an empty or invalid handle. */
	const char *name() const noexcept { return rv_device_name(p_); }
	/** An rv_device_kind, or a negative errno. */
	int kind() const noexcept { return rv_device_kind_of(p_); }
};

/**
 * Options of context::open() (rv_context_attr), set by name: each setter sets
 * the field and its mask bit, the rest keep the C defaults. The strings and
 * bytes given are borrowed until context::open() returns (rv_context_new
 * copies what it keeps). Software device only; other devices refuse a secret.
 */
class context_options {
public:
	/** The software device's listen address and GID ("127.0.0.1" by default). */
	context_options &listen_addr(const char *addr) noexcept
	{
		a_.mask |= RV_CONTEXT_ATTR_LISTEN_ADDR;
		a_.listen_addr = addr;
		return *this;
	}
	/** rv_soft_flags bits (RV_SOFT_CRC_OPTIONAL, RV_SOFT_NO_EXT, RV_SOFT_ROCE_PORT). */
	context_options &soft_flags(uint32_t flags) noexcept
	{
		a_.mask |= RV_CONTEXT_ATTR_SOFT_FLAGS;
		a_.soft_flags = flags;
		return *this;
	}
	/** The shared secret every connection must prove (1 to 4096 bytes). */
	context_options &auth_secret(span<const uint8_t> secret) noexcept
	{
		return auth_secret(secret.data(), secret.size());
	}
	context_options &auth_secret(std::string_view secret) noexcept
	{
		return auth_secret(secret.data(), secret.size());
	}
	/** The C attributes, for rv_context_new() called directly. */
	const rv_context_attr &c_attr() const noexcept { return a_; }

private:
	context_options &auth_secret(const void *p, std::size_t n) noexcept
	{
		a_.mask |= RV_CONTEXT_ATTR_AUTH_SECRET;
		a_.auth_secret = p;
		// Too long for the C field: pass a length rv_context_new refuses
		// (-EINVAL) rather than a truncated secret.
		a_.auth_secret_len = n > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(n);
		return *this;
	}

	rv_context_attr a_{};
};

class context : public handle<rv_context> {
public:
	using handle::handle;
	context() noexcept = default;
	context(handle<rv_context> h) noexcept : handle(std::move(h)) {}

	static context open(const device &dev, const rv_context_attr *attr = nullptr)
		RVERBS_HPP_CREATE(context, rv_context, rv_context_new, dev.get(), attr)
	static context open(const device &dev, const rv_context_attr *attr,
			    std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(context, rv_context, rv_context_new, dev.get(), attr)
	/** Open with options set by name: context::open(dev, context_options().auth_secret(s)). */
	static context open(const device &dev, const context_options &opts)
	{
		return open(dev, &opts.c_attr());
	}
	static context open(const device &dev, const context_options &opts, std::error_code &ec) noexcept
	{
		return open(dev, &opts.c_attr(), ec);
	}

	/** The device (a new reference). */
	device get_device() const noexcept { return device::borrow(rv_context_device(p_)); }

	rv_device_attr query_device() const
	{
		rv_device_attr a{};
		a.mask = RV_DEVICE_ATTR_ALL;
		detail::check(rv_context_query_device(p_, &a), "rv_context_query_device");
		return a;
	}
	rv_device_attr query_device(std::error_code &ec) const noexcept
	{
		rv_device_attr a{};
		a.mask = RV_DEVICE_ATTR_ALL;
		detail::check(rv_context_query_device(p_, &a), ec);
		return a;
	}
	/** The device's raw clock, in the units of CQ timestamps (rv_context_read_clock). */
	uint64_t read_clock() const
	{
		uint64_t v = 0;
		detail::check(rv_context_read_clock(p_, &v), "rv_context_read_clock");
		return v;
	}
	uint64_t read_clock(std::error_code &ec) const noexcept
	{
		uint64_t v = 0;
		detail::check(rv_context_read_clock(p_, &v), ec);
		return v;
	}
	rv_port_attr query_port(uint8_t port_num = 1) const
	{
		rv_port_attr a{};
		a.mask = RV_PORT_ATTR_ALL;
		detail::check(rv_context_query_port(p_, port_num, &a), "rv_context_query_port");
		return a;
	}
	rv_port_attr query_port(uint8_t port_num, std::error_code &ec) const noexcept
	{
		rv_port_attr a{};
		a.mask = RV_PORT_ATTR_ALL;
		detail::check(rv_context_query_port(p_, port_num, &a), ec);
		return a;
	}
	std::array<uint8_t, 16> query_gid(uint8_t port_num = 1, int index = 0) const
	{
		std::array<uint8_t, 16> gid{};
		detail::check(rv_context_query_gid(p_, port_num, index, gid.data()),
			      "rv_context_query_gid");
		return gid;
	}
	std::array<uint8_t, 16> query_gid(uint8_t port_num, int index,
					  std::error_code &ec) const noexcept
	{
		std::array<uint8_t, 16> gid{};
		detail::check(rv_context_query_gid(p_, port_num, index, gid.data()), ec);
		return gid;
	}
	/** One GID table entry with its type (rv_context_query_gid_entry). */
	rv_gid_entry query_gid_entry(uint8_t port_num = 1, uint32_t index = 0) const
	{
		rv_gid_entry e{};
		detail::check(rv_context_query_gid_entry(p_, port_num, index, &e),
			      "rv_context_query_gid_entry");
		return e;
	}
	/** One P_Key, host byte order (rv_context_query_pkey). */
	uint16_t query_pkey(uint8_t port_num = 1, uint16_t index = 0) const
	{
		uint16_t pkey = 0;
		detail::check(rv_context_query_pkey(p_, port_num, index, &pkey), "rv_context_query_pkey");
		return pkey;
	}
	/** The live ownership tree (rv_context_dump). */
	std::string dump() const
	{
		char *text = nullptr;
		detail::check(rv_context_dump(p_, &text), "rv_context_dump");
		std::string s;
		try {
			s = text;
		} catch (...) {
			rv_free(text);
			throw;
		}
		rv_free(text);
		return s;
	}
};

class cq;

/**
 * A completion channel (rv_comp_channel): a descriptor that becomes readable
 * when an armed CQ attached to it (cq::create(ctx, cqe, channel)) gets a
 * completion. Closing it closes its CQs (and their QPs) first.
 */
class comp_channel : public handle<rv_comp_channel> {
public:
	using handle::handle;
	comp_channel() noexcept = default;
	comp_channel(handle<rv_comp_channel> h) noexcept : handle(std::move(h)) {}

	static comp_channel create(const context &ctx)
		RVERBS_HPP_CREATE(comp_channel, rv_comp_channel, rv_comp_channel_new, ctx.get(), nullptr)
	static comp_channel create(const context &ctx, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(comp_channel, rv_comp_channel, rv_comp_channel_new, ctx.get(), nullptr)

	/** The descriptor, for poll/epoll (owned by the channel: do not read or close it). */
	int fd() const { return detail::check(rv_comp_channel_fd(p_), "rv_comp_channel_fd"); }
	int fd(std::error_code &ec) const noexcept { return detail::check(rv_comp_channel_fd(p_), ec); }

	/**
	 * Take one event, waiting up to @p timeout_ms (0: do not wait; negative:
	 * forever) (rv_comp_channel_get_event). Returns the CQ that fired (a new
	 * reference), or an empty cq when none came (EAGAIN, ETIMEDOUT); throws on
	 * other errors. Acknowledge each event with cq::ack_events().
	 */
	cq get_event(int timeout_ms);
	/** As get_event(), with every failure, EAGAIN and ETIMEDOUT included, in @p ec. */
	cq get_event(int timeout_ms, std::error_code &ec) noexcept;
};

/** A thread domain (rv_td_new): bound to parent domains (pd::create_parent). */
class td : public handle<rv_td> {
public:
	using handle::handle;
	td() noexcept = default;
	td(handle<rv_td> h) noexcept : handle(std::move(h)) {}

	static td create(const context &ctx) RVERBS_HPP_CREATE(td, rv_td, rv_td_new, ctx.get(), nullptr)
	static td create(const context &ctx, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(td, rv_td, rv_td_new, ctx.get(), nullptr)

	/** The context (a new reference). */
	context get_context() const noexcept { return context::borrow(rv_td_context(p_)); }
};

class pd : public handle<rv_pd> {
public:
	using handle::handle;
	pd() noexcept = default;
	pd(handle<rv_pd> h) noexcept : handle(std::move(h)) {}

	static pd create(const context &ctx, const rv_pd_attr *attr = nullptr)
		RVERBS_HPP_CREATE(pd, rv_pd, rv_pd_new, ctx.get(), attr)
	static pd create(const context &ctx, const rv_pd_attr *attr, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(pd, rv_pd, rv_pd_new, ctx.get(), attr)

	/**
	 * A parent domain of @p parent (rv_pd_new with RV_PD_ATTR_PARENT), bound
	 * to @p thread when it is not empty; for allocators, fill rv_pd_attr and
	 * call create(ctx, &attr).
	 */
	static pd create_parent(const pd &parent, const td &thread = td())
	{
		rv_pd_attr a = parent_attr(parent, thread);
		RVERBS_HPP_CREATE(pd, rv_pd, rv_pd_new, rv_pd_context(parent.get()), &a)
	}
	static pd create_parent(const pd &parent, const td &thread, std::error_code &ec) noexcept
	{
		rv_pd_attr a = parent_attr(parent, thread);
		RVERBS_HPP_CREATE_EC(pd, rv_pd, rv_pd_new, rv_pd_context(parent.get()), &a)
	}

	/** The context (a new reference). */
	context get_context() const noexcept { return context::borrow(rv_pd_context(p_)); }
	/** A parent domain's parent (a new reference); empty for an ordinary PD. */
	pd get_parent() const noexcept { return pd::borrow(rv_pd_parent(p_)); }

private:
	static rv_pd_attr parent_attr(const pd &parent, const td &thread) noexcept
	{
		rv_pd_attr a{};
		a.mask = RV_PD_ATTR_PARENT;
		a.parent = parent.get();
		if (thread) {
			a.mask |= RV_PD_ATTR_TD;
			a.td = thread.get();
		}
		return a;
	}
};

/** An XRC domain (rverbs/xrcd.h): its XRC SRQs and target QPs close with it. */
class xrcd : public handle<rv_xrcd> {
public:
	using handle::handle;
	xrcd() noexcept = default;
	xrcd(handle<rv_xrcd> h) noexcept : handle(std::move(h)) {}

	static xrcd create(const context &ctx, const rv_xrcd_attr *attr = nullptr)
		RVERBS_HPP_CREATE(xrcd, rv_xrcd, rv_xrcd_new, ctx.get(), attr)
	static xrcd create(const context &ctx, const rv_xrcd_attr *attr, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(xrcd, rv_xrcd, rv_xrcd_new, ctx.get(), attr)

	/** The context (a new reference). */
	context get_context() const noexcept { return context::borrow(rv_xrcd_context(p_)); }
};

/** An address handle (UD): rv_ah_new / rv_ah_from_wc. */
class ah : public handle<rv_ah> {
public:
	using handle::handle;
	ah() noexcept = default;
	ah(handle<rv_ah> h) noexcept : handle(std::move(h)) {}

	static ah create(const pd &pd, const rv_ah_attr &attr)
		RVERBS_HPP_CREATE(ah, rv_ah, rv_ah_new, pd.get(), &attr)
	static ah create(const pd &pd, const rv_ah_attr &attr, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(ah, rv_ah, rv_ah_new, pd.get(), &attr)
	/** The handle that replies to a received UD message; grh: the first
	 * RV_UD_GRH_LEN bytes of its receive buffer. */
	static ah from_wc(const pd &pd, const rv_wc &wc, const void *grh, uint8_t port_num = 1)
		RVERBS_HPP_CREATE(ah, rv_ah, rv_ah_from_wc, pd.get(), port_num, &wc, grh)
	static ah from_wc(const pd &pd, const rv_wc &wc, const void *grh, uint8_t port_num,
			  std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(ah, rv_ah, rv_ah_from_wc, pd.get(), port_num, &wc, grh)

	pd get_pd() const noexcept { return pd::borrow(rv_ah_pd(p_)); }
	/** The address vector. */
	rv_ah_attr query() const
	{
		rv_ah_attr a{};
		detail::check(rv_ah_query(p_, &a), "rv_ah_query");
		return a;
	}
};

class mr : public handle<rv_mr> {
public:
	using handle::handle;
	mr() noexcept = default;
	mr(handle<rv_mr> h) noexcept : handle(std::move(h)) {}

	/** Register caller memory (rv_mr_reg); keep it mapped until the MR is closed. */
	static mr reg(const pd &pd, void *addr, size_t length, uint32_t access)
		RVERBS_HPP_CREATE(mr, rv_mr, rv_mr_reg, pd.get(), addr, length, access)
	static mr reg(const pd &pd, void *addr, size_t length, uint32_t access,
		      std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mr, rv_mr, rv_mr_reg, pd.get(), addr, length, access)
	/** An implicit on-demand MR: the whole address space (rv_mr_reg with
	 *  nullptr and RV_MR_IMPLICIT_LENGTH); @p access must hold RV_ACCESS_ON_DEMAND. */
	static mr reg_implicit(const pd &pd, uint32_t access)
		RVERBS_HPP_CREATE(mr, rv_mr, rv_mr_reg, pd.get(), nullptr, RV_MR_IMPLICIT_LENGTH, access)
	static mr reg_implicit(const pd &pd, uint32_t access, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mr, rv_mr, rv_mr_reg, pd.get(), nullptr, RV_MR_IMPLICIT_LENGTH, access)
	/** Advice on ranges of @p pd's on-demand MRs (rv_mr_advise, as ibv_advise_mr). */
	static void advise(const pd &pd, rv_advise_mr_advice advice, uint32_t flags, span<const rv_sge> sges)
	{
		detail::check(rv_mr_advise(pd.get(), advice, flags, sges.data(), sges.size()), "rv_mr_advise");
	}
	static void advise(const pd &pd, rv_advise_mr_advice advice, uint32_t flags, span<const rv_sge> sges,
			   std::error_code &ec) noexcept
	{
		detail::check(rv_mr_advise(pd.get(), advice, flags, sges.data(), sges.size()), ec);
	}
	/** Register @p length bytes of the dma-buf @p fd from @p offset, addressed
	 *  from @p iova (rv_mr_reg_dmabuf); @p fd may be closed afterwards. */
	static mr reg_dmabuf(const pd &pd, uint64_t offset, size_t length, uint64_t iova, int fd, uint32_t access)
		RVERBS_HPP_CREATE(mr, rv_mr, rv_mr_reg_dmabuf, pd.get(), offset, length, iova, fd, access)
	static mr reg_dmabuf(const pd &pd, uint64_t offset, size_t length, uint64_t iova, int fd, uint32_t access,
			     std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mr, rv_mr, rv_mr_reg_dmabuf, pd.get(), offset, length, iova, fd, access)
	/** Allocate zeroed, page-aligned memory and register it (rv_mr_alloc). */
	static mr alloc(const pd &pd, size_t length, uint32_t access)
		RVERBS_HPP_CREATE(mr, rv_mr, rv_mr_alloc, pd.get(), length, access, nullptr)
	static mr alloc(const pd &pd, size_t length, uint32_t access, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mr, rv_mr, rv_mr_alloc, pd.get(), length, access, nullptr)
	/** rv_mr_alloc() with a placement (page size, NUMA node, strictness). */
	static mr alloc(const pd &pd, size_t length, uint32_t access, const rv_mr_alloc_attr &attr)
		RVERBS_HPP_CREATE(mr, rv_mr, rv_mr_alloc, pd.get(), length, access, &attr)
	static mr alloc(const pd &pd, size_t length, uint32_t access, const rv_mr_alloc_attr &attr,
			std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mr, rv_mr, rv_mr_alloc, pd.get(), length, access, &attr)
	/** The page size backing the region, as obtained (rv_mr_page_size). */
	size_t page_size() const noexcept { return rv_mr_page_size(p_); }
	/** The NUMA node of the first page, -1 when unknown, or a negative errno. */
	int numa_node() const noexcept { return rv_mr_numa_node(p_); }

	void *addr() const noexcept { return rv_mr_addr(p_); }
	size_t length() const noexcept { return rv_mr_length(p_); }
	uint32_t lkey() const noexcept { return rv_mr_lkey(p_); }
	uint32_t rkey() const noexcept { return rv_mr_rkey(p_); }
	/** Change access, PD and/or memory in place (rv_mr_rereg); read the keys again after. */
	void rereg(uint32_t flags, rv_pd *new_pd, void *addr, size_t length, uint32_t access) const
	{
		detail::check(rv_mr_rereg(p_, flags, new_pd, addr, length, access), "rv_mr_rereg");
	}
	void rereg(uint32_t flags, rv_pd *new_pd, void *addr, size_t length, uint32_t access,
		   std::error_code &ec) const noexcept
	{
		detail::check(rv_mr_rereg(p_, flags, new_pd, addr, length, access), ec);
	}
	/** The memory as bytes (rv_mr_alloc memory lives until the last reference). */
	span<uint8_t> bytes() const noexcept
	{
		return span<uint8_t>(static_cast<uint8_t *>(addr()), length());
	}
	/** An rv_sge for [offset, offset + len) of the region, clamped to it. */
	rv_sge sge(size_t offset = 0, size_t len = SIZE_MAX) const noexcept
	{
		size_t n = length();
		if (offset > n)
			offset = n;
		if (len > n - offset)
			len = n - offset;
		return rv_sge{static_cast<uint64_t>(reinterpret_cast<uintptr_t>(addr())) + offset,
			      static_cast<uint32_t>(len), lkey()};
	}
	pd get_pd() const noexcept { return pd::borrow(rv_mr_pd(p_)); }
};

/**
 * A memory window (rverbs/mw.h): remote access to a range of an MR, granted
 * and revoked by binds posted on a QP (qp::bind_mw). close() stops its rkey.
 */
class mw : public handle<rv_mw> {
public:
	using handle::handle;
	mw() noexcept = default;
	mw(handle<rv_mw> h) noexcept : handle(std::move(h)) {}

	/** An unbound window of @p type (RV_MW_TYPE_1 or RV_MW_TYPE_2) on @p pd. */
	static mw alloc(const pd &pd, rv_mw_type type)
		RVERBS_HPP_CREATE(mw, rv_mw, rv_mw_alloc, pd.get(), type)
	static mw alloc(const pd &pd, rv_mw_type type, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mw, rv_mw, rv_mw_alloc, pd.get(), type)

	/** The current rkey (set by the last bind posted); 0 when closed. */
	uint32_t rkey() const noexcept { return rv_mw_rkey(p_); }
	/** RV_MW_TYPE_1 or RV_MW_TYPE_2; 0 when closed. */
	uint32_t type() const noexcept { return rv_mw_type_of(p_); }
};

class cq : public handle<rv_cq> {
public:
	using handle::handle;
	cq() noexcept = default;
	cq(handle<rv_cq> h) noexcept : handle(std::move(h)) {}

	static cq create(const context &ctx, const rv_cq_attr *attr = nullptr)
		RVERBS_HPP_CREATE(cq, rv_cq, rv_cq_new, ctx.get(), attr)
	static cq create(const context &ctx, const rv_cq_attr *attr, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(cq, rv_cq, rv_cq_new, ctx.get(), attr)
	/** A CQ of at least @p cqe entries (0: the default) whose events go to @p ch. */
	static cq create(const context &ctx, uint32_t cqe, const comp_channel &ch)
	{
		rv_cq_attr a = channel_attr(cqe, ch);
		return create(ctx, &a);
	}
	static cq create(const context &ctx, uint32_t cqe, const comp_channel &ch,
			 std::error_code &ec) noexcept
	{
		rv_cq_attr a = channel_attr(cqe, ch);
		return create(ctx, &a, ec);
	}

	/** A CQ of at least @p cqe entries (0: the default) whose completions carry
	 *  @p wc_flags (rv_cq_wc_flags; read them with poll_ex()). */
	static cq create_ex(const context &ctx, uint32_t cqe, uint64_t wc_flags)
	{
		rv_cq_attr a = ex_attr(cqe, wc_flags);
		return create(ctx, &a);
	}
	static cq create_ex(const context &ctx, uint32_t cqe, uint64_t wc_flags, std::error_code &ec) noexcept
	{
		rv_cq_attr a = ex_attr(cqe, wc_flags);
		return create(ctx, &a, ec);
	}
	/** A CQ in a parent domain (rv_cq_attr::pd): closing the parent domain closes it. */
	static cq create_in(const pd &parent_domain)
	{
		rv_cq_attr a = pd_attr(parent_domain);
		return create(parent_domain.get_context(), &a);
	}
	static cq create_in(const pd &parent_domain, std::error_code &ec) noexcept
	{
		rv_cq_attr a = pd_attr(parent_domain);
		return create(parent_domain.get_context(), &a, ec);
	}
	/** Poll up to wc.size() completions with their extended fields (rv_cq_poll_ex). */
	size_t poll_ex(span<rv_wc_ex> wc) const
	{
		return static_cast<size_t>(
			detail::check(rv_cq_poll_ex(p_, wc.data(), clamp(wc.size())), "rv_cq_poll_ex"));
	}
	size_t poll_ex(span<rv_wc_ex> wc, std::error_code &ec) const noexcept
	{
		int n = detail::check(rv_cq_poll_ex(p_, wc.data(), clamp(wc.size())), ec);
		return n < 0 ? 0 : static_cast<size_t>(n);
	}
	/** The rv_cq_wc_flags the CQ was created with. */
	uint64_t wc_flags() const noexcept { return rv_cq_get_wc_flags(p_); }

	/** Poll up to wc.size() completions into @p wc; returns how many. */
	size_t poll(span<rv_wc> wc) const
	{
		return static_cast<size_t>(
			detail::check(rv_cq_poll(p_, wc.data(), clamp(wc.size())), "rv_cq_poll"));
	}
	size_t poll(span<rv_wc> wc, std::error_code &ec) const noexcept
	{
		int n = detail::check(rv_cq_poll(p_, wc.data(), clamp(wc.size())), ec);
		return n < 0 ? 0 : static_cast<size_t>(n);
	}
	uint32_t size() const noexcept { return rv_cq_size(p_); }
	/** Resize to at least @p cqe entries, keeping the completions (rv_cq_resize). */
	void resize(uint32_t cqe) { detail::check(rv_cq_resize(p_, cqe), "rv_cq_resize"); }
	void resize(uint32_t cqe, std::error_code &ec) noexcept { detail::check(rv_cq_resize(p_, cqe), ec); }

	/** Arm the CQ: its next completion (or next solicited one) sends one event
	 *  to its channel (rv_cq_req_notify). Poll again after arming. */
	void req_notify(bool solicited_only = false)
	{
		detail::check(rv_cq_req_notify(p_, solicited_only ? 1 : 0), "rv_cq_req_notify");
	}
	void req_notify(bool solicited_only, std::error_code &ec) noexcept
	{
		detail::check(rv_cq_req_notify(p_, solicited_only ? 1 : 0), ec);
	}
	/** Acknowledge @p n events comp_channel::get_event() took for this CQ. */
	void ack_events(unsigned int n) { detail::check(rv_cq_ack_events(p_, n), "rv_cq_ack_events"); }
	void ack_events(unsigned int n, std::error_code &ec) noexcept
	{
		detail::check(rv_cq_ack_events(p_, n), ec);
	}
	/** How wait() waits: RV_CQ_WAIT_POLL (default), RV_CQ_WAIT_EVENT or
	 *  RV_CQ_WAIT_SPIN_THEN_BLOCK with a @p spin_ns budget (rv_cq_set_wait_mode). */
	void set_wait_mode(rv_cq_wait_mode mode, uint64_t spin_ns = 0)
	{
		detail::check(rv_cq_set_wait_mode(p_, mode, spin_ns), "rv_cq_set_wait_mode");
	}
	void set_wait_mode(rv_cq_wait_mode mode, uint64_t spin_ns, std::error_code &ec) noexcept
	{
		detail::check(rv_cq_set_wait_mode(p_, mode, spin_ns), ec);
	}
	/**
	 * Wait up to @p timeout_ms (0: poll once; negative: forever) for
	 * completions, in the wait mode set (rv_cq_wait); returns how many were
	 * written to @p wc, 0 when none came (EAGAIN, ETIMEDOUT). Throws on other
	 * errors (RV_ECLOSED, EOVERFLOW, EINTR ...).
	 */
	size_t wait(span<rv_wc> wc, int timeout_ms)
	{
		int n = rv_cq_wait(p_, wc.data(), clamp(wc.size()), timeout_ms);
		if (n == -EAGAIN || n == -ETIMEDOUT)
			return 0;
		return static_cast<size_t>(detail::check(n, "rv_cq_wait"));
	}
	/** As wait(), with every failure, EAGAIN and ETIMEDOUT included, in @p ec. */
	size_t wait(span<rv_wc> wc, int timeout_ms, std::error_code &ec) noexcept
	{
		int n = detail::check(rv_cq_wait(p_, wc.data(), clamp(wc.size()), timeout_ms), ec);
		return n < 0 ? 0 : static_cast<size_t>(n);
	}

private:
	static rv_cq_attr pd_attr(const pd &parent_domain) noexcept
	{
		rv_cq_attr a{};
		a.mask = RV_CQ_ATTR_PD;
		a.pd = parent_domain.get();
		return a;
	}
	static int clamp(size_t n) noexcept { return n > 0x7fffffff ? 0x7fffffff : static_cast<int>(n); }
	static rv_cq_attr ex_attr(uint32_t cqe, uint64_t wc_flags) noexcept
	{
		rv_cq_attr a{};
		a.mask = RV_CQ_ATTR_WC_FLAGS | (cqe ? RV_CQ_ATTR_CQE : 0);
		a.cqe = cqe;
		a.wc_flags = wc_flags;
		return a;
	}
	static rv_cq_attr channel_attr(uint32_t cqe, const comp_channel &ch) noexcept
	{
		rv_cq_attr a{};
		a.mask = RV_CQ_ATTR_CHANNEL | (cqe ? RV_CQ_ATTR_CQE : 0);
		a.cqe = cqe;
		a.channel = ch.get();
		return a;
	}
};

inline cq comp_channel::get_event(int timeout_ms)
{
	rv_cq *c = nullptr;
	int rc = rv_comp_channel_get_event(p_, timeout_ms, &c);
	if (rc == -EAGAIN || rc == -ETIMEDOUT)
		return cq();
	detail::check(rc, "rv_comp_channel_get_event");
	return cq::borrow(c);
}
inline cq comp_channel::get_event(int timeout_ms, std::error_code &ec) noexcept
{
	rv_cq *c = nullptr;
	if (detail::check(rv_comp_channel_get_event(p_, timeout_ms, &c), ec) < 0)
		return cq();
	return cq::borrow(c);
}

/** A shared receive queue (rverbs/srq.h); closing it closes the QPs using it. */
class srq : public handle<rv_srq> {
public:
	using handle::handle;
	srq() noexcept = default;
	srq(handle<rv_srq> h) noexcept : handle(std::move(h)) {}

	static srq create(const pd &pd, const rv_srq_attr *attr = nullptr)
		RVERBS_HPP_CREATE(srq, rv_srq, rv_srq_new, pd.get(), attr)
	static srq create(const pd &pd, const rv_srq_attr *attr, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(srq, rv_srq, rv_srq_new, pd.get(), attr)

	pd get_pd() const noexcept { return pd::borrow(rv_srq_pd(p_)); }
	size_t post_recv(span<const rv_recv_wr> wrs)
	{
		size_t n = 0;
		detail::check(rv_srq_post_recv(p_, wrs.data(), wrs.size(), &n), "rv_srq_post_recv");
		return n;
	}
	size_t post_recv(span<const rv_recv_wr> wrs, std::error_code &ec) noexcept
	{
		size_t n = 0;
		detail::check(rv_srq_post_recv(p_, wrs.data(), wrs.size(), &n), ec);
		return n;
	}
	/** Arm the limit: RV_EVENT_SRQ_LIMIT_REACHED once fewer than @p limit WRs remain. */
	void arm_limit(uint32_t limit)
	{
		rv_srq_attr a{};
		a.mask = RV_SRQ_LIMIT;
		a.srq_limit = limit;
		detail::check(rv_srq_modify(p_, &a), "rv_srq_modify");
	}
	void modify(const rv_srq_attr &a) { detail::check(rv_srq_modify(p_, &a), "rv_srq_modify"); }
	void modify(const rv_srq_attr &a, std::error_code &ec) noexcept { detail::check(rv_srq_modify(p_, &a), ec); }
	rv_srq_attr query() const
	{
		rv_srq_attr a{};
		detail::check(rv_srq_query(p_, &a), "rv_srq_query");
		return a;
	}
	/** An XRC SRQ receiving through the target QPs of @p domain, completing on @p done. */
	static srq create_xrc(const pd &pd, const xrcd &domain, const cq &done, rv_srq_attr a = {})
	{
		a.mask |= RV_SRQ_INIT_ATTR_XRC;
		a.xrcd = domain.get();
		a.cq = done.get();
		return create(pd, &a);
	}
	/** An XRC SRQ's number (rv_srq_num), what initiators name it by. */
	uint32_t num() const
	{
		uint32_t n = 0;
		detail::check(rv_srq_num(p_, &n), "rv_srq_num");
		return n;
	}
};

/** An asynchronous event (rverbs/event.h) that acknowledges itself when destroyed. */
class async_event {
public:
	async_event() noexcept = default;
	async_event(const async_event &) = delete;
	async_event &operator=(const async_event &) = delete;
	async_event(async_event &&o) noexcept : ev_(o.ev_) { o.ev_ = rv_async_event{}; }
	async_event &operator=(async_event &&o) noexcept
	{
		if (this != &o) {
			rv_async_event_ack(&ev_);
			ev_ = o.ev_;
			o.ev_ = rv_async_event{};
		}
		return *this;
	}
	~async_event() { rv_async_event_ack(&ev_); }

	/** An rv_async_event_type. */
	uint32_t type() const noexcept { return ev_.type; }
	const char *type_str() const noexcept { return rv_async_event_str(ev_.type); }
	uint32_t port_num() const noexcept { return ev_.port_num; }
	/** The handles the event names (borrowed from the event; NULL when none). */
	rv_qp *qp() const noexcept { return ev_.qp; }
	rv_cq *cq() const noexcept { return ev_.cq; }
	rv_srq *srq() const noexcept { return ev_.srq; }
	/** Release the references now (also done by the destructor). */
	void ack() noexcept { rv_async_event_ack(&ev_); }
	rv_async_event *c_event() noexcept { return &ev_; }

private:
	rv_async_event ev_{};
};

/** The context's asynchronous event descriptor (for epoll), or a negative errno. */
inline int async_fd(const context &ctx) noexcept { return rv_context_async_fd(ctx.get()); }

/** Take one asynchronous event, waiting up to @p timeout_ms (negative: forever).
 *  Returns false when none came (EAGAIN, ETIMEDOUT); throws on other errors. */
inline bool get_async_event(const context &ctx, async_event &out, int timeout_ms)
{
	async_event ev;
	int rc = rv_context_get_async_event(ctx.get(), ev.c_event(), timeout_ms);
	if (rc == -EAGAIN || rc == -ETIMEDOUT)
		return false;
	detail::check(rc, "rv_context_get_async_event");
	out = std::move(ev);
	return true;
}

/** Point a work request at a scatter/gather list (the list must outlive the post). */
inline void set_sg_list(rv_send_wr &wr, span<const rv_sge> sg) noexcept
{
	wr.sg_list = sg.data();
	wr.num_sge = static_cast<uint32_t>(sg.size());
}
inline void set_sg_list(rv_recv_wr &wr, span<const rv_sge> sg) noexcept
{
	wr.sg_list = sg.data();
	wr.num_sge = static_cast<uint32_t>(sg.size());
}

/**
 * Work-request builders: an rv_send_wr for each operation, signalled by
 * default, for qp::post_send(). The scatter/gather list is pointed to, not
 * copied: it must outlive the post (`rv_sge sg[1] = {mr.sge(0, 8)};` then
 * `wr::send(sg)`). Immediate data is in host byte order.
 */
namespace wr {

inline rv_send_wr make(uint32_t opcode, span<const rv_sge> sg, uint64_t wr_id,
		       uint32_t flags) noexcept
{
	rv_send_wr w{};
	w.wr_id = wr_id;
	w.opcode = opcode;
	w.send_flags = flags;
	set_sg_list(w, sg);
	return w;
}
/** RDMA WRITE of @p sg to @p remote_addr under @p rkey. */
inline rv_send_wr write(span<const rv_sge> sg, uint64_t remote_addr, uint32_t rkey,
			uint64_t wr_id = 0, uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_RDMA_WRITE, sg, wr_id, flags);
	w.remote_addr = remote_addr;
	w.rkey = rkey;
	return w;
}
/** RDMA WRITE with immediate data: consumes a receive at the peer, whose
 *  completion (RV_WC_RECV_RDMA_WITH_IMM) carries @p imm. */
inline rv_send_wr write_imm(span<const rv_sge> sg, uint64_t remote_addr, uint32_t rkey,
			    uint32_t imm, uint64_t wr_id = 0,
			    uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = write(sg, remote_addr, rkey, wr_id, flags);
	w.opcode = RV_WR_RDMA_WRITE_WITH_IMM;
	w.imm_data = imm;
	return w;
}
/** RDMA READ from @p remote_addr under @p rkey into @p sg. */
inline rv_send_wr read(span<const rv_sge> sg, uint64_t remote_addr, uint32_t rkey,
		       uint64_t wr_id = 0, uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_RDMA_READ, sg, wr_id, flags);
	w.remote_addr = remote_addr;
	w.rkey = rkey;
	return w;
}
/** SEND of @p sg. */
inline rv_send_wr send(span<const rv_sge> sg, uint64_t wr_id = 0,
		       uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	return make(RV_WR_SEND, sg, wr_id, flags);
}
/** SEND with immediate data @p imm (the receive's completion carries it). */
inline rv_send_wr send_imm(span<const rv_sge> sg, uint32_t imm, uint64_t wr_id = 0,
			   uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_SEND_WITH_IMM, sg, wr_id, flags);
	w.imm_data = imm;
	return w;
}
/** SEND that also invalidates @p rkey at the peer. */
inline rv_send_wr send_inv(span<const rv_sge> sg, uint32_t rkey, uint64_t wr_id = 0,
			   uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_SEND_WITH_INV, sg, wr_id, flags);
	w.imm_data = rkey;
	return w;
}
/** Invalidate the local @p rkey (a type 2 memory window's). */
inline rv_send_wr local_inv(uint32_t rkey, uint64_t wr_id = 0,
			    uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_LOCAL_INV, span<const rv_sge>(), wr_id, flags);
	w.imm_data = rkey;
	return w;
}
/** Atomic compare and swap of the 8-byte word at @p remote_addr: if it equals
 *  @p compare it becomes @p swap; the original lands in @p sg (8 bytes). */
inline rv_send_wr compare_swap(span<const rv_sge> sg, uint64_t remote_addr, uint32_t rkey,
			       uint64_t compare, uint64_t swap, uint64_t wr_id = 0,
			       uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_ATOMIC_CMP_AND_SWP, sg, wr_id, flags);
	w.remote_addr = remote_addr;
	w.rkey = rkey;
	w.compare_add = compare;
	w.swap = swap;
	return w;
}
/** Atomic fetch and add of @p add to the 8-byte word at @p remote_addr; the
 *  original lands in @p sg (8 bytes). */
inline rv_send_wr fetch_add(span<const rv_sge> sg, uint64_t remote_addr, uint32_t rkey,
			    uint64_t add, uint64_t wr_id = 0,
			    uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_ATOMIC_FETCH_AND_ADD, sg, wr_id, flags);
	w.remote_addr = remote_addr;
	w.rkey = rkey;
	w.compare_add = add;
	return w;
}
/** UD SEND to QP @p remote_qpn (Q_Key @p remote_qkey) at the address @p dest. */
inline rv_send_wr ud_send(span<const rv_sge> sg, const ah &dest, uint32_t remote_qpn,
			  uint32_t remote_qkey, uint64_t wr_id = 0,
			  uint32_t flags = RV_SEND_SIGNALED) noexcept
{
	rv_send_wr w = make(RV_WR_SEND, sg, wr_id, flags);
	w.ah = dest.get();
	w.remote_qpn = remote_qpn;
	w.remote_qkey = remote_qkey;
	return w;
}

/** @p w sent by an XRC initiator to the remote XRC SRQ numbered @p remote_srqn. */
inline rv_send_wr xrc(rv_send_wr w, uint32_t remote_srqn) noexcept
{
	w.remote_srqn = remote_srqn;
	return w;
}

} // namespace wr

/** A UD QP's membership of a multicast group (qp::join_mcast, rv_mcast_join):
 *  move-only; leave() or the destructor leaves (rv_mcast_leave). */
class mcast {
public:
	mcast() noexcept = default;
	explicit mcast(rv_mcast *m) noexcept : m_(m) {}
	mcast(const mcast &) = delete;
	mcast &operator=(const mcast &) = delete;
	mcast(mcast &&o) noexcept : m_(o.m_) { o.m_ = nullptr; }
	mcast &operator=(mcast &&o) noexcept
	{
		if (this != &o) {
			reset();
			m_ = o.m_;
			o.m_ = nullptr;
		}
		return *this;
	}
	~mcast() { reset(); }
	/** Detach the QP and leave the group (rv_mcast_leave); nothing once left. */
	void leave() noexcept { reset(); }
	bool joined() const noexcept { return m_ != nullptr; }
	rv_mcast *get() const noexcept { return m_; }

private:
	void reset() noexcept
	{
		if (m_)
			rv_mcast_leave(m_);
		m_ = nullptr;
	}
	rv_mcast *m_ = nullptr;
};


class qp : public handle<rv_qp> {
public:
	using handle::handle;
	qp() noexcept = default;
	qp(handle<rv_qp> h) noexcept : handle(std::move(h)) {}

	static qp create(const pd &pd, const rv_qp_init_attr &attr)
		RVERBS_HPP_CREATE(qp, rv_qp, rv_qp_new, pd.get(), &attr)
	static qp create(const pd &pd, const rv_qp_init_attr &attr, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(qp, rv_qp, rv_qp_new, pd.get(), &attr)
	/** A QP of the default type and sizes on one CQ. */
	static qp create(const pd &pd, const cq &cq) { return create(pd, init_attr(cq)); }
	/** An XRC initiator sending completions to @p cq. */
	static qp create_xrc_send(const pd &pd, const cq &cq)
	{
		rv_qp_init_attr a = init_attr(cq);
		a.mask |= RV_QP_INIT_ATTR_TYPE;
		a.qp_type = RV_QPT_XRC_SEND;
		return create(pd, a);
	}
	/** An XRC target of @p domain (no CQ: each SRQ has its own). */
	static qp create_xrc_recv(const pd &pd, const xrcd &domain)
	{
		rv_qp_init_attr a{};
		a.mask = RV_QP_INIT_ATTR_TYPE | RV_QP_INIT_ATTR_XRCD;
		a.qp_type = RV_QPT_XRC_RECV;
		a.xrcd = domain.get();
		return create(pd, a);
	}
	static qp create(const pd &pd, const cq &cq, std::error_code &ec) noexcept
	{
		return create(pd, init_attr(cq), ec);
	}

	uint32_t num() const noexcept { return rv_qp_num(p_); }
	pd get_pd() const noexcept { return pd::borrow(rv_qp_pd(p_)); }
	/** An rv_qp_state. */
	int state() const { return detail::check(rv_qp_state_of(p_), "rv_qp_state_of"); }
	int state(std::error_code &ec) const noexcept { return detail::check(rv_qp_state_of(p_), ec); }
	/** ECE options (rv_qp_query_ece); EOPNOTSUPP on a device without ECE. */
	rv_ece query_ece() const
	{
		rv_ece e{};
		detail::check(rv_qp_query_ece(p_, &e), "rv_qp_query_ece");
		return e;
	}
	rv_ece query_ece(std::error_code &ec) const noexcept
	{
		rv_ece e{};
		detail::check(rv_qp_query_ece(p_, &e), ec);
		return e;
	}
	void set_ece(const rv_ece &e) { detail::check(rv_qp_set_ece(p_, &e), "rv_qp_set_ece"); }
	void set_ece(const rv_ece &e, std::error_code &ec) noexcept { detail::check(rv_qp_set_ece(p_, &e), ec); }
	/** Pace the send queue at @p kbps (0: no limit) (rv_qp_set_rate_limit). */
	void set_rate_limit(uint32_t kbps)
	{
		rv_qp_rate_limit_attr a = rate_attr(kbps);
		detail::check(rv_qp_set_rate_limit(p_, &a), "rv_qp_set_rate_limit");
	}
	void set_rate_limit(uint32_t kbps, std::error_code &ec) noexcept
	{
		rv_qp_rate_limit_attr a = rate_attr(kbps);
		detail::check(rv_qp_set_rate_limit(p_, &a), ec);
	}
	rv_qp_cap cap() const
	{
		rv_qp_cap c{};
		detail::check(rv_qp_get_cap(p_, &c), "rv_qp_get_cap");
		return c;
	}
	rv_qp_cap cap(std::error_code &ec) const noexcept
	{
		rv_qp_cap c{};
		detail::check(rv_qp_get_cap(p_, &c), ec);
		return c;
	}
	rv_qp_attr query(uint64_t mask = RV_QP_ATTR_ALL) const
	{
		rv_qp_attr a{};
		a.mask = mask;
		detail::check(rv_qp_query(p_, &a), "rv_qp_query");
		return a;
	}
	rv_qp_attr query(uint64_t mask, std::error_code &ec) const noexcept
	{
		rv_qp_attr a{};
		a.mask = mask;
		detail::check(rv_qp_query(p_, &a), ec);
		return a;
	}
	void modify(const rv_qp_attr &a) { detail::check(rv_qp_modify(p_, &a), "rv_qp_modify"); }
	void modify(const rv_qp_attr &a, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_modify(p_, &a), ec);
	}
	void to_init(const rv_qp_attr *a = nullptr) { detail::check(rv_qp_to_init(p_, a), "rv_qp_to_init"); }
	void to_init(const rv_qp_attr *a, std::error_code &ec) noexcept { detail::check(rv_qp_to_init(p_, a), ec); }
	void to_rtr(const rv_qp_attr *a) { detail::check(rv_qp_to_rtr(p_, a), "rv_qp_to_rtr"); }
	void to_rtr(const rv_qp_attr *a, std::error_code &ec) noexcept { detail::check(rv_qp_to_rtr(p_, a), ec); }
	void to_rts(const rv_qp_attr *a = nullptr) { detail::check(rv_qp_to_rts(p_, a), "rv_qp_to_rts"); }
	void to_rts(const rv_qp_attr *a, std::error_code &ec) noexcept { detail::check(rv_qp_to_rts(p_, a), ec); }

	/** This QP's endpoint for its peer. */
	rv_endpoint endpoint() const
	{
		rv_endpoint ep{};
		detail::check(rv_qp_endpoint(p_, &ep), "rv_qp_endpoint");
		return ep;
	}
	rv_endpoint endpoint(std::error_code &ec) const noexcept
	{
		rv_endpoint ep{};
		detail::check(rv_qp_endpoint(p_, &ep), ec);
		return ep;
	}
	/** The index of the GID the QP advertises and sends from (rv_qp_gid_index):
	 *  the sgid_index of an address vector built by hand. */
	uint32_t gid_index() const
	{
		return static_cast<uint32_t>(detail::check(rv_qp_gid_index(p_), "rv_qp_gid_index"));
	}
	int gid_index(std::error_code &ec) const noexcept { return detail::check(rv_qp_gid_index(p_), ec); }
	/** Advertise and send from GID entry @p index (rv_qp_set_gid_index). */
	void set_gid_index(uint32_t index) { detail::check(rv_qp_set_gid_index(p_, index), "rv_qp_set_gid_index"); }
	void set_gid_index(uint32_t index, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_set_gid_index(p_, index), ec);
	}
	/** Attach this UD QP to the multicast group @p gid (rv_qp_attach_mcast). */
	void attach_mcast(const uint8_t (&gid)[16], uint16_t lid = 0)
	{
		detail::check(rv_qp_attach_mcast(p_, gid, lid), "rv_qp_attach_mcast");
	}
	void attach_mcast(const uint8_t (&gid)[16], uint16_t lid, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_attach_mcast(p_, gid, lid), ec);
	}
	/** Join this UD QP to the IP multicast group @p group ("239.1.2.3") and attach
	 *  it (rv_mcast_join); @p ret_ah receives the group's address handle,
	 *  @p ret_qkey its Q_Key (send to RV_MCAST_QPN). */
	rverbs::mcast join_mcast(const char *group, rverbs::ah &ret_ah, uint32_t *ret_qkey = nullptr,
				 int timeout_ms = 5000)
	{
		rv_mcast *m = nullptr;
		rv_ah *a = nullptr;
		detail::check(rv_mcast_join(p_, group, timeout_ms, &m, &a, ret_qkey), "rv_mcast_join");
		ret_ah = rverbs::ah(a, adopt);
		return rverbs::mcast(m);
	}
	rverbs::mcast join_mcast(const char *group, rverbs::ah &ret_ah, uint32_t *ret_qkey, int timeout_ms,
				 std::error_code &ec) noexcept
	{
		rv_mcast *m = nullptr;
		rv_ah *a = nullptr;
		detail::check(rv_mcast_join(p_, group, timeout_ms, &m, &a, ret_qkey), ec);
		if (!ec)
			ret_ah = rverbs::ah(a, adopt);
		return rverbs::mcast(m);
	}
	/** Detach this UD QP from the multicast group @p gid (rv_qp_detach_mcast). */
	void detach_mcast(const uint8_t (&gid)[16], uint16_t lid = 0)
	{
		detail::check(rv_qp_detach_mcast(p_, gid, lid), "rv_qp_detach_mcast");
	}
	void detach_mcast(const uint8_t (&gid)[16], uint16_t lid, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_detach_mcast(p_, gid, lid), ec);
	}
	/** RESET/INIT -> RTS against @p peer (rv_qp_connect). */
	void connect(const rv_endpoint &peer) { detail::check(rv_qp_connect(p_, &peer), "rv_qp_connect"); }
	void connect(const rv_endpoint &peer, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_connect(p_, &peer), ec);
	}

	/** Post send WRs; returns how many were posted (all, or throws). */
	/** Selective signalling as a QP policy (rv_qp_set_signal_every); 0 turns it off. */
	void set_signal_every(uint32_t n)
	{
		detail::check(rv_qp_set_signal_every(p_, n), "rv_qp_set_signal_every");
	}
	void set_signal_every(uint32_t n, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_set_signal_every(p_, n), ec);
	}
	/** Send WRs posted and not yet known complete (rv_qp_send_outstanding). */
	int send_outstanding() const
	{
		return detail::check(rv_qp_send_outstanding(p_), "rv_qp_send_outstanding");
	}
	int send_outstanding(std::error_code &ec) const noexcept
	{
		return detail::check(rv_qp_send_outstanding(p_), ec);
	}
	size_t post_send(span<const rv_send_wr> wrs)
	{
		size_t n = 0;
		detail::check(rv_qp_post_send(p_, wrs.data(), wrs.size(), &n), "rv_qp_post_send");
		return n;
	}
	/** Post send WRs; returns how many were posted before a failure (see @p ec). */
	size_t post_send(span<const rv_send_wr> wrs, std::error_code &ec) noexcept
	{
		size_t n = 0;
		detail::check(rv_qp_post_send(p_, wrs.data(), wrs.size(), &n), ec);
		return n;
	}
	size_t post_recv(span<const rv_recv_wr> wrs)
	{
		size_t n = 0;
		detail::check(rv_qp_post_recv(p_, wrs.data(), wrs.size(), &n), "rv_qp_post_recv");
		return n;
	}
	size_t post_recv(span<const rv_recv_wr> wrs, std::error_code &ec) noexcept
	{
		size_t n = 0;
		detail::check(rv_qp_post_recv(p_, wrs.data(), wrs.size(), &n), ec);
		return n;
	}

	void write(const rv_sge &local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id = 0)
	{
		detail::check(rv_qp_write(p_, &local, remote_addr, rkey, wr_id), "rv_qp_write");
	}
	void write(const rv_sge &local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id,
		   std::error_code &ec) noexcept
	{
		detail::check(rv_qp_write(p_, &local, remote_addr, rkey, wr_id), ec);
	}
	void read(const rv_sge &local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id = 0)
	{
		detail::check(rv_qp_read(p_, &local, remote_addr, rkey, wr_id), "rv_qp_read");
	}
	void read(const rv_sge &local, uint64_t remote_addr, uint32_t rkey, uint64_t wr_id,
		  std::error_code &ec) noexcept
	{
		detail::check(rv_qp_read(p_, &local, remote_addr, rkey, wr_id), ec);
	}
	void send(const rv_sge &local, uint64_t wr_id = 0)
	{
		detail::check(rv_qp_send(p_, &local, wr_id), "rv_qp_send");
	}
	void send(const rv_sge &local, uint64_t wr_id, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_send(p_, &local, wr_id), ec);
	}
	void recv(const rv_sge &local, uint64_t wr_id = 0)
	{
		detail::check(rv_qp_recv(p_, &local, wr_id), "rv_qp_recv");
	}
	void recv(const rv_sge &local, uint64_t wr_id, std::error_code &ec) noexcept
	{
		detail::check(rv_qp_recv(p_, &local, wr_id), ec);
	}
	/** Post one work request (see rverbs::wr for builders). */
	void post_send(const rv_send_wr &w) { post_send(span<const rv_send_wr>(&w, 1)); }
	void post_send(const rv_send_wr &w, std::error_code &ec) noexcept
	{
		post_send(span<const rv_send_wr>(&w, 1), ec);
	}

	/** @name The work-request builder (rv_qp_wr_*, as ibv_wr_*): wr_start(), one
	 *  operation and its data per WR, then wr_complete() or wr_abort().
	 *  @{ */
	void wr_start() { detail::check(rv_qp_wr_start(p_), "rv_qp_wr_start"); }
	void wr_start(std::error_code &ec) noexcept { detail::check(rv_qp_wr_start(p_), ec); }
	void wr_send(uint64_t wr_id, uint32_t flags)
	{
		detail::check(rv_qp_wr_send(p_, wr_id, flags), "rv_qp_wr_send");
	}
	void wr_send_imm(uint64_t wr_id, uint32_t flags, uint32_t imm)
	{
		detail::check(rv_qp_wr_send_imm(p_, wr_id, flags, imm), "rv_qp_wr_send_imm");
	}
	void wr_send_inv(uint64_t wr_id, uint32_t flags, uint32_t rkey)
	{
		detail::check(rv_qp_wr_send_inv(p_, wr_id, flags, rkey), "rv_qp_wr_send_inv");
	}
	void wr_rdma_write(uint64_t wr_id, uint32_t flags, uint32_t rkey, uint64_t remote_addr)
	{
		detail::check(rv_qp_wr_rdma_write(p_, wr_id, flags, rkey, remote_addr), "rv_qp_wr_rdma_write");
	}
	void wr_rdma_write_imm(uint64_t wr_id, uint32_t flags, uint32_t rkey, uint64_t remote_addr, uint32_t imm)
	{
		detail::check(rv_qp_wr_rdma_write_imm(p_, wr_id, flags, rkey, remote_addr, imm),
			      "rv_qp_wr_rdma_write_imm");
	}
	void wr_rdma_read(uint64_t wr_id, uint32_t flags, uint32_t rkey, uint64_t remote_addr)
	{
		detail::check(rv_qp_wr_rdma_read(p_, wr_id, flags, rkey, remote_addr), "rv_qp_wr_rdma_read");
	}
	void wr_atomic_cmp_swp(uint64_t wr_id, uint32_t flags, uint32_t rkey, uint64_t remote_addr,
			       uint64_t compare, uint64_t swap)
	{
		detail::check(rv_qp_wr_atomic_cmp_swp(p_, wr_id, flags, rkey, remote_addr, compare, swap),
			      "rv_qp_wr_atomic_cmp_swp");
	}
	void wr_atomic_fetch_add(uint64_t wr_id, uint32_t flags, uint32_t rkey, uint64_t remote_addr, uint64_t add)
	{
		detail::check(rv_qp_wr_atomic_fetch_add(p_, wr_id, flags, rkey, remote_addr, add),
			      "rv_qp_wr_atomic_fetch_add");
	}
	/** 8 bytes at @p value, where the device has atomic write. */
	void wr_atomic_write(uint64_t wr_id, uint32_t flags, uint32_t rkey, uint64_t remote_addr, const void *value)
	{
		detail::check(rv_qp_wr_atomic_write(p_, wr_id, flags, rkey, remote_addr, value),
			      "rv_qp_wr_atomic_write");
	}
	void wr_atomic_write(uint64_t wr_id, uint32_t flags, uint32_t rkey, uint64_t remote_addr, const void *value,
			     std::error_code &ec) noexcept
	{
		detail::check(rv_qp_wr_atomic_write(p_, wr_id, flags, rkey, remote_addr, value), ec);
	}
	void wr_set_sge(const rv_sge &g)
	{
		detail::check(rv_qp_wr_set_sge(p_, g.lkey, g.addr, g.length), "rv_qp_wr_set_sge");
	}
	void wr_set_sge_list(span<const rv_sge> g)
	{
		detail::check(rv_qp_wr_set_sge_list(p_, g.data(), g.size()), "rv_qp_wr_set_sge_list");
	}
	/** The payload, copied now and sent inline. */
	void wr_set_inline_data(const void *addr, size_t length)
	{
		detail::check(rv_qp_wr_set_inline_data(p_, addr, length), "rv_qp_wr_set_inline_data");
	}
	/** Several buffers (addr and length of each rv_sge), copied now, sent inline. */
	void wr_set_inline_data_list(span<const rv_sge> bufs)
	{
		detail::check(rv_qp_wr_set_inline_data_list(p_, bufs.data(), bufs.size()),
			      "rv_qp_wr_set_inline_data_list");
	}
	void wr_set_ud_addr(const ah &dest, uint32_t remote_qpn, uint32_t remote_qkey)
	{
		detail::check(rv_qp_wr_set_ud_addr(p_, dest.get(), remote_qpn, remote_qkey), "rv_qp_wr_set_ud_addr");
	}
	void wr_set_xrc_srqn(uint32_t remote_srqn)
	{
		detail::check(rv_qp_wr_set_xrc_srqn(p_, remote_srqn), "rv_qp_wr_set_xrc_srqn");
	}
	/** Post the batch; returns how many WRs were posted. */
	size_t wr_complete()
	{
		size_t n = 0;
		detail::check(rv_qp_wr_complete(p_, &n), "rv_qp_wr_complete");
		return n;
	}
	size_t wr_complete(std::error_code &ec) noexcept
	{
		size_t n = 0;
		detail::check(rv_qp_wr_complete(p_, &n), ec);
		return n;
	}
	void wr_abort() noexcept { rv_qp_wr_abort(p_); }
	/** @} */

	/** Post a bind of @p w to the range @p info (rv_qp_bind_mw): @p w gets its
	 *  new rkey at once; the bind completes with RV_WC_BIND_MW. */
	void bind_mw(const mw &w, const rv_mw_bind_info &info, uint64_t wr_id = 0,
		     uint32_t send_flags = RV_SEND_SIGNALED)
	{
		detail::check(rv_qp_bind_mw(p_, w.get(), &info, wr_id, send_flags), "rv_qp_bind_mw");
	}
	void bind_mw(const mw &w, const rv_mw_bind_info &info, uint64_t wr_id, uint32_t send_flags,
		     std::error_code &ec) noexcept
	{
		detail::check(rv_qp_bind_mw(p_, w.get(), &info, wr_id, send_flags), ec);
	}

private:
	static rv_qp_rate_limit_attr rate_attr(uint32_t kbps) noexcept
	{
		rv_qp_rate_limit_attr a{};
		a.mask = RV_QP_RATE_LIMIT_RATE;
		a.rate_limit = kbps;
		return a;
	}
	static rv_qp_init_attr init_attr(const cq &c) noexcept
	{
		rv_qp_init_attr a{};
		a.mask = RV_QP_INIT_ATTR_SEND_CQ;
		a.send_cq = c.get();
		return a;
	}
};

// ---- the software device (rverbs/soft.h): fault injection, the path -------

/** Inject a fault into the next `count` frames `ctx` sends, or only those of
 *  `only` (a QP of ctx) when given (rv_soft_fault_inject). Throws rverbs::error
 *  (EOPNOTSUPP off soft0). */
inline void soft_fault_inject(const context &ctx, rv_soft_fault_kind kind, uint32_t count = 1,
			      uint32_t delay_ms = 0, const qp *only = nullptr)
{
	detail::check(rv_soft_fault_inject(ctx.get(), only ? only->get() : nullptr, kind,
					   kind == RV_SOFT_FAULT_CLEAR ? 0 : count, delay_ms),
		      "rv_soft_fault_inject");
}
inline void soft_fault_inject(const context &ctx, rv_soft_fault_kind kind, uint32_t count,
			      uint32_t delay_ms, const qp *only, std::error_code &ec) noexcept
{
	detail::check(rv_soft_fault_inject(ctx.get(), only ? only->get() : nullptr, kind,
					   kind == RV_SOFT_FAULT_CLEAR ? 0 : count, delay_ms),
		      ec);
}

/** The path `q`'s traffic takes now on the software device: TCP, the
 *  same-host path, its shared-memory rings, or none (rv_soft_qp_path).
 *  Throws rverbs::error (EOPNOTSUPP off soft0). */
inline rv_soft_path soft_qp_path(const qp &q)
{
	rv_soft_path p = RV_SOFT_PATH_NONE;
	detail::check(rv_soft_qp_path(q.get(), &p), "rv_soft_qp_path");
	return p;
}
inline rv_soft_path soft_qp_path(const qp &q, std::error_code &ec) noexcept
{
	rv_soft_path p = RV_SOFT_PATH_NONE;
	detail::check(rv_soft_qp_path(q.get(), &p), ec);
	return p;
}

// ---- the connection helper (rverbs/conn.h) --------------------------------

/**
 * Options of conn::connect(), conn::connect_start() and listener::accept()
 * (rv_conn_attr), set by name: each setter sets the field and its mask bit.
 * Handles, QP arrays and bytes given are borrowed until the call returns.
 * The shared secret of an authenticated connection is the context's
 * (context_options::auth_secret).
 */
class conn_options {
public:
	/** The PD of the created QPs (default: a new PD). */
	conn_options &pd(const rverbs::pd &p) noexcept
	{
		a_.mask |= RV_CONN_ATTR_PD;
		a_.pd = p.get();
		return *this;
	}
	/** The CQs of the created QPs (default: one new CQ for both). */
	conn_options &cq(const rverbs::cq &send, const rverbs::cq *recv = nullptr) noexcept
	{
		a_.mask |= RV_CONN_ATTR_CQ;
		a_.send_cq = send.get();
		a_.recv_cq = recv ? recv->get() : nullptr;
		return *this;
	}
	/** RV_QPT_RC (default) or RV_QPT_UC. */
	conn_options &qp_type(uint32_t type) noexcept
	{
		a_.mask |= RV_CONN_ATTR_QP_TYPE;
		a_.qp_type = type;
		return *this;
	}
	/** Queue sizes of the created QPs. */
	conn_options &qp_cap(const rv_qp_cap &cap) noexcept
	{
		a_.mask |= RV_CONN_ATTR_QP_CAP;
		a_.qp_cap = cap;
		return *this;
	}
	/** How many QPs the connection has (1..RV_CONN_MAX_QPS). */
	conn_options &num_qps(uint32_t n) noexcept
	{
		a_.mask |= RV_CONN_ATTR_NUM_QPS;
		a_.num_qps = n;
		return *this;
	}
	/** Use these QPs (RESET or INIT, one context) instead of creating them. */
	conn_options &qps(span<rv_qp *const> qps) noexcept
	{
		a_.mask |= RV_CONN_ATTR_QPS | RV_CONN_ATTR_NUM_QPS;
		a_.qps = qps.data();
		a_.num_qps = qps.size() > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(qps.size());
		return *this;
	}
	/** Advertise this region (address, length, rkey) to the peer. */
	conn_options &mr(const rverbs::mr &m) noexcept
	{
		a_.mask |= RV_CONN_ATTR_MR;
		a_.mr = m.get();
		return *this;
	}
	/** Application data for the peer (≤ RV_CONN_PRIVATE_DATA_MAX bytes). */
	conn_options &private_data(span<const uint8_t> data) noexcept
	{
		return private_data(data.data(), data.size());
	}
	conn_options &private_data(std::string_view data) noexcept
	{
		return private_data(data.data(), data.size());
	}
	/** rv_endpoint_caps the peer's device must have (RV_EP_CAP_ATOMIC, RV_EP_CAP_IMM). */
	conn_options &required_caps(uint32_t caps) noexcept
	{
		a_.mask |= RV_CONN_ATTR_REQUIRED_CAPS;
		a_.required_caps = caps;
		return *this;
	}
	/** An rv_conn_transport (default RV_CONN_TRANSPORT_AUTO). */
	conn_options &transport(uint32_t t) noexcept
	{
		a_.mask |= RV_CONN_ATTR_TRANSPORT;
		a_.transport = t;
		return *this;
	}
	/** Advertise and send from this GID index (TCP transport; rv_qp_set_gid_index). */
	conn_options &gid_index(uint32_t i) noexcept
	{
		a_.mask |= RV_CONN_ATTR_GID_INDEX;
		a_.gid_index = i;
		return *this;
	}
	/** GRH traffic class / IP TOS (rdma_cm: RDMA_OPTION_ID_TOS). */
	conn_options &traffic_class(uint8_t tc) noexcept
	{
		a_.mask |= RV_CONN_ATTR_TRAFFIC_CLASS;
		a_.traffic_class = tc;
		return *this;
	}
	/** Service level, 0..15. */
	conn_options &sl(uint8_t v) noexcept
	{
		a_.mask |= RV_CONN_ATTR_SL;
		a_.sl = v;
		return *this;
	}
	/** GRH flow label, 20 bits. */
	conn_options &flow_label(uint32_t v) noexcept
	{
		a_.mask |= RV_CONN_ATTR_FLOW_LABEL;
		a_.flow_label = v;
		return *this;
	}
	/** GRH hop limit / IP TTL, 1..255. */
	conn_options &hop_limit(uint8_t v) noexcept
	{
		a_.mask |= RV_CONN_ATTR_HOP_LIMIT;
		a_.hop_limit = v;
		return *this;
	}
	/** Q_Key of the connection's UD QPs (default 0x11111111). */
	conn_options &qkey(uint32_t v) noexcept
	{
		a_.mask |= RV_CONN_ATTR_QKEY;
		a_.qkey = v;
		return *this;
	}
	/** Local ACK timeout code, 1..31 (rdma_cm: RDMA_OPTION_ID_ACK_TIMEOUT). */
	conn_options &ack_timeout(uint8_t v) noexcept
	{
		a_.mask |= RV_CONN_ATTR_ACK_TIMEOUT;
		a_.ack_timeout = v;
		return *this;
	}
	/** rdma_cm: each address/route resolution's timeout and further attempts. */
	conn_options &resolve(uint32_t timeout_ms, uint32_t retries) noexcept
	{
		a_.mask |= RV_CONN_ATTR_RESOLVE;
		a_.resolve_timeout_ms = timeout_ms;
		a_.resolve_retries = retries;
		return *this;
	}
	/** The C attributes, for rv_connect() called directly. */
	const rv_conn_attr &c_attr() const noexcept { return a_; }

private:
	conn_options &private_data(const void *p, std::size_t n) noexcept
	{
		a_.mask |= RV_CONN_ATTR_PRIVATE_DATA;
		a_.private_data = p;
		// Too long for the C field: a length the C call refuses (-EINVAL).
		a_.private_data_len = n > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(n);
		return *this;
	}

	rv_conn_attr a_{};
};

/** Options of listener::create() (rv_listener_attr), set by name. */
class listener_options {
public:
	/** listen(2) backlog (default 128). */
	listener_options &backlog(uint32_t n) noexcept
	{
		a_.mask |= RV_LISTENER_ATTR_BACKLOG;
		a_.backlog = n;
		return *this;
	}
	/** How long one client may take over its exchange (default 5000 ms). */
	listener_options &handshake_timeout_ms(uint32_t ms) noexcept
	{
		a_.mask |= RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT;
		a_.handshake_timeout_ms = ms;
		return *this;
	}
	/** Clients in the middle of an exchange at once (default 256). */
	listener_options &max_pending(uint32_t n) noexcept
	{
		a_.mask |= RV_LISTENER_ATTR_MAX_PENDING;
		a_.max_pending = n;
		return *this;
	}
	/** An rv_conn_transport (default RV_CONN_TRANSPORT_AUTO). */
	listener_options &transport(uint32_t t) noexcept
	{
		a_.mask |= RV_LISTENER_ATTR_TRANSPORT;
		a_.transport = t;
		return *this;
	}
	const rv_listener_attr &c_attr() const noexcept { return a_; }

private:
	rv_listener_attr a_{};
};

/** A connection from the connection helper: connected QPs in RTS. */
class conn : public handle<rv_conn> {
public:
	using handle::handle;
	conn() noexcept = default;
	conn(handle<rv_conn> h) noexcept : handle(std::move(h)) {}

	/** Connect to "host:port" and wait up to @p timeout_ms (-1: no limit). */
	static conn connect(const context &ctx, const char *addr, const rv_conn_attr *attr = nullptr,
			    int timeout_ms = -1)
		RVERBS_HPP_CREATE(conn, rv_conn, rv_connect, ctx.get(), addr, attr, timeout_ms)
	static conn connect(const context &ctx, const char *addr, const rv_conn_attr *attr,
			    int timeout_ms, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(conn, rv_conn, rv_connect, ctx.get(), addr, attr, timeout_ms)
	/** Begin connecting without waiting (rv_connect_start); then poll(). */
	static conn connect_start(const context &ctx, const char *addr, const rv_conn_attr *attr = nullptr)
		RVERBS_HPP_CREATE(conn, rv_conn, rv_connect_start, ctx.get(), addr, attr)
	static conn connect_start(const context &ctx, const char *addr, const rv_conn_attr *attr,
				  std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(conn, rv_conn, rv_connect_start, ctx.get(), addr, attr)
	/** With options set by name: conn::connect(ctx, addr, conn_options().mr(m), 5000). */
	static conn connect(const context &ctx, const char *addr, const conn_options &opts,
			    int timeout_ms = -1)
	{
		return connect(ctx, addr, &opts.c_attr(), timeout_ms);
	}
	static conn connect(const context &ctx, const char *addr, const conn_options &opts,
			    int timeout_ms, std::error_code &ec) noexcept
	{
		return connect(ctx, addr, &opts.c_attr(), timeout_ms, ec);
	}
	static conn connect_start(const context &ctx, const char *addr, const conn_options &opts)
	{
		return connect_start(ctx, addr, &opts.c_attr());
	}
	static conn connect_start(const context &ctx, const char *addr, const conn_options &opts,
				  std::error_code &ec) noexcept
	{
		return connect_start(ctx, addr, &opts.c_attr(), ec);
	}

	/** Process the control channel; returns an rv_conn_event. */
	uint32_t poll(int timeout_ms = 0)
	{
		uint32_t ev = RV_CONN_EVENT_NONE;
		detail::check(rv_conn_poll(p_, timeout_ms, &ev), "rv_conn_poll");
		return ev;
	}
	uint32_t poll(int timeout_ms, std::error_code &ec) noexcept
	{
		uint32_t ev = RV_CONN_EVENT_NONE;
		detail::check(rv_conn_poll(p_, timeout_ms, &ev), ec);
		return ev;
	}
	void disconnect(int timeout_ms = -1)
	{
		detail::check(rv_conn_disconnect(p_, timeout_ms), "rv_conn_disconnect");
	}
	void disconnect(int timeout_ms, std::error_code &ec) noexcept
	{
		detail::check(rv_conn_disconnect(p_, timeout_ms), ec);
	}
	int fd() const { return detail::check(rv_conn_fd(p_), "rv_conn_fd"); }
	int fd(std::error_code &ec) const noexcept { return detail::check(rv_conn_fd(p_), ec); }
	/** An rv_conn_state. */
	int state() const { return detail::check(rv_conn_state_of(p_), "rv_conn_state_of"); }
	int state(std::error_code &ec) const noexcept { return detail::check(rv_conn_state_of(p_), ec); }
	uint32_t num_qps() const noexcept { return rv_conn_num_qps(p_); }
	/** QP @p index (a new reference; empty when out of range or closed). */
	rverbs::qp qp(uint32_t index = 0) const noexcept { return qp::borrow(rv_conn_qp(p_, index)); }
	rverbs::pd pd() const noexcept { return pd::borrow(rv_conn_pd(p_)); }
	rverbs::cq cq() const noexcept { return cq::borrow(rv_conn_cq(p_)); }
	/** A UD connection's send target: a new address handle to the peer's QP
	 *  @p index, its QP number and Q_Key (rv_conn_peer_ah). */
	rverbs::ah peer_ah(uint32_t index = 0, uint32_t *ret_qpn = nullptr, uint32_t *ret_qkey = nullptr) const
	{
		rv_ah *out = nullptr;
		detail::check(rv_conn_peer_ah(p_, index, &out, ret_qpn, ret_qkey), "rv_conn_peer_ah");
		return rverbs::ah(out, adopt);
	}
	rverbs::ah peer_ah(uint32_t index, uint32_t *ret_qpn, uint32_t *ret_qkey, std::error_code &ec) const noexcept
	{
		rv_ah *out = nullptr;
		detail::check(rv_conn_peer_ah(p_, index, &out, ret_qpn, ret_qkey), ec);
		return rverbs::ah(out, adopt);
	}
	rv_endpoint peer_endpoint(uint32_t index = 0) const
	{
		rv_endpoint ep{};
		detail::check(rv_conn_peer_endpoint(p_, index, &ep), "rv_conn_peer_endpoint");
		return ep;
	}
	rv_endpoint peer_endpoint(uint32_t index, std::error_code &ec) const noexcept
	{
		rv_endpoint ep{};
		detail::check(rv_conn_peer_endpoint(p_, index, &ep), ec);
		return ep;
	}
	/** The application data the peer sent. */
	std::vector<uint8_t> peer_data() const
	{
		size_t n = 0;
		detail::check(rv_conn_peer_data(p_, nullptr, 0, &n), "rv_conn_peer_data");
		std::vector<uint8_t> v(n);
		if (n)
			detail::check(rv_conn_peer_data(p_, v.data(), v.size(), &n), "rv_conn_peer_data");
		v.resize(n);
		return v;
	}
	/** Copy the peer's data into @p buf; returns its length (see rv_conn_peer_data). */
	size_t peer_data(span<uint8_t> buf, std::error_code &ec) const noexcept
	{
		size_t n = 0;
		detail::check(rv_conn_peer_data(p_, buf.data(), buf.size(), &n), ec);
		return n;
	}
	std::string peer_addr() const
	{
		char buf[128];
		detail::check(rv_conn_peer_addr(p_, buf, sizeof(buf)), "rv_conn_peer_addr");
		return buf;
	}
	/** An rv_mtu. */
	int path_mtu() const { return detail::check(rv_conn_path_mtu(p_), "rv_conn_path_mtu"); }
	/** An rv_conn_transport. */
	int transport() const { return detail::check(rv_conn_transport_of(p_), "rv_conn_transport_of"); }
};

/** Listens on "host:port" for rverbs connections. */
class listener : public handle<rv_listener> {
public:
	using handle::handle;
	listener() noexcept = default;
	listener(handle<rv_listener> h) noexcept : handle(std::move(h)) {}

	static listener create(const context &ctx, const char *addr,
			       const rv_listener_attr *attr = nullptr)
		RVERBS_HPP_CREATE(listener, rv_listener, rv_listener_new, ctx.get(), addr, attr)
	static listener create(const context &ctx, const char *addr, const rv_listener_attr *attr,
			       std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(listener, rv_listener, rv_listener_new, ctx.get(), addr, attr)
	static listener create(const context &ctx, const char *addr, const listener_options &opts)
	{
		return create(ctx, addr, &opts.c_attr());
	}
	static listener create(const context &ctx, const char *addr, const listener_options &opts,
			       std::error_code &ec) noexcept
	{
		return create(ctx, addr, &opts.c_attr(), ec);
	}

	int port() const { return detail::check(rv_listener_port(p_), "rv_listener_port"); }
	int fd() const { return detail::check(rv_listener_fd(p_), "rv_listener_fd"); }
	/** Wait up to @p timeout_ms (-1: no limit) for one client. */
	conn accept(const rv_conn_attr *attr = nullptr, int timeout_ms = -1)
		RVERBS_HPP_CREATE(conn, rv_conn, rv_listener_accept, p_, attr, timeout_ms)
	conn accept(const rv_conn_attr *attr, int timeout_ms, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(conn, rv_conn, rv_listener_accept, p_, attr, timeout_ms)
	conn accept(const conn_options &opts, int timeout_ms = -1)
	{
		return accept(&opts.c_attr(), timeout_ms);
	}
	conn accept(const conn_options &opts, int timeout_ms, std::error_code &ec) noexcept
	{
		return accept(&opts.c_attr(), timeout_ms, ec);
	}
};

// ---- registered memory: pool and registration cache -----------------------

/** A registered-memory pool on a PD (rv_pool). Buffers are the C structs. */
class pool : public handle<rv_pool> {
public:
	using handle::handle;
	pool() noexcept = default;
	pool(handle<rv_pool> h) noexcept : handle(std::move(h)) {}

	static pool create(const rverbs::pd &pd, const rv_pool_attr *attr = nullptr)
		RVERBS_HPP_CREATE(pool, rv_pool, rv_pool_new, pd.get(), attr)
	static pool create(const rverbs::pd &pd, const rv_pool_attr *attr, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(pool, rv_pool, rv_pool_new, pd.get(), attr)

	/** A buffer of at least @p length bytes; give it back with put(). */
	rv_pool_buf *get(size_t length)
	{
		rv_pool_buf *b = nullptr;
		detail::check(rv_pool_get(p_, length, &b), "rv_pool_get");
		return b;
	}
	rv_pool_buf *get(size_t length, std::error_code &ec) noexcept
	{
		rv_pool_buf *b = nullptr;
		detail::check(rv_pool_get(p_, length, &b), ec);
		return b;
	}
	void put(rv_pool_buf *buf) { detail::check(rv_pool_put(p_, buf), "rv_pool_put"); }
	void put(rv_pool_buf *buf, std::error_code &ec) noexcept { detail::check(rv_pool_put(p_, buf), ec); }
	rv_pool_stats stats() const
	{
		rv_pool_stats s{};
		s.mask = RV_POOL_STATS_ALL;
		detail::check(rv_pool_stats_get(p_, &s), "rv_pool_stats_get");
		return s;
	}
	rv_pool_stats stats(std::error_code &ec) const noexcept
	{
		rv_pool_stats s{};
		s.mask = RV_POOL_STATS_ALL;
		detail::check(rv_pool_stats_get(p_, &s), ec);
		return s;
	}
	rverbs::pd get_pd() const noexcept { return pd::borrow(rv_pool_pd(p_)); }
};

/** A bounded registration cache for caller memory (rv_mr_cache); no close():
 *  the last reference drops it, and closing its PD closes its MRs. */
class mr_cache : public handle<rv_mr_cache> {
public:
	using handle::handle;
	mr_cache() noexcept = default;
	mr_cache(handle<rv_mr_cache> h) noexcept : handle(std::move(h)) {}

	static mr_cache create(const rverbs::pd &pd, const rv_mr_cache_attr *attr = nullptr)
		RVERBS_HPP_CREATE(mr_cache, rv_mr_cache, rv_mr_cache_new, pd.get(), attr)
	static mr_cache create(const rverbs::pd &pd, const rv_mr_cache_attr *attr,
			       std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mr_cache, rv_mr_cache, rv_mr_cache_new, pd.get(), attr)

	/** An MR covering [addr, addr + length) with at least @p access (a new reference). */
	mr get(void *addr, size_t length, uint32_t access)
		RVERBS_HPP_CREATE(mr, rv_mr, rv_mr_cache_get, p_, addr, length, access)
	mr get(void *addr, size_t length, uint32_t access, std::error_code &ec) noexcept
		RVERBS_HPP_CREATE_EC(mr, rv_mr, rv_mr_cache_get, p_, addr, length, access)
	/** Forget cached registrations overlapping the range; returns how many. */
	int invalidate(const void *addr, size_t length)
	{
		return detail::check(rv_mr_cache_invalidate(p_, addr, length), "rv_mr_cache_invalidate");
	}
	int invalidate(const void *addr, size_t length, std::error_code &ec) noexcept
	{
		return detail::check(rv_mr_cache_invalidate(p_, addr, length), ec);
	}
	rv_mr_cache_stats stats() const
	{
		rv_mr_cache_stats s{};
		s.mask = RV_MR_CACHE_STATS_ALL;
		detail::check(rv_mr_cache_stats_get(p_, &s), "rv_mr_cache_stats_get");
		return s;
	}
};

#undef RVERBS_HPP_CREATE
#undef RVERBS_HPP_CREATE_EC

// ---- endpoints ------------------------------------------------------------

/** Encode an endpoint (rv_endpoint_pack). */
inline std::vector<uint8_t> pack(const rv_endpoint &ep)
{
	std::vector<uint8_t> buf(RV_ENDPOINT_PACKED_MAX);
	size_t n = 0;
	detail::check(rv_endpoint_pack(&ep, buf.data(), buf.size(), &n), "rv_endpoint_pack");
	buf.resize(n);
	return buf;
}
/** Encode into @p buf; returns the length written (0 and @p ec set on failure). */
inline size_t pack(const rv_endpoint &ep, span<uint8_t> buf, std::error_code &ec) noexcept
{
	size_t n = 0;
	if (detail::check(rv_endpoint_pack(&ep, buf.data(), buf.size(), &n), ec) < 0)
		return 0;
	return n;
}
/** Decode and validate an endpoint (rv_endpoint_unpack). */
inline rv_endpoint unpack(span<const uint8_t> bytes)
{
	rv_endpoint ep{};
	detail::check(rv_endpoint_unpack(bytes.data(), bytes.size(), &ep), "rv_endpoint_unpack");
	return ep;
}
inline rv_endpoint unpack(span<const uint8_t> bytes, std::error_code &ec) noexcept
{
	rv_endpoint ep{};
	detail::check(rv_endpoint_unpack(bytes.data(), bytes.size(), &ep), ec);
	return ep;
}

/** rv_wc_status_str(). */
inline const char *wc_status_str(uint32_t status) noexcept
{
	return rv_wc_status_str(static_cast<int>(status));
}
/** rv_wc_status_hint(). */
inline const char *wc_status_hint(uint32_t status) noexcept
{
	return rv_wc_status_hint(static_cast<int>(status));
}

} // namespace rverbs

#endif
