// A tiny test harness: CHECK() aborts the current case, SKIP() skips it, and
// the summary line is "N passed, N failed, N skipped". Exit status: 1 when a
// case failed, 77 (meson's skip) when every case was skipped, else 0.
#ifndef RVERBS_CPP_TEST_HARNESS_HPP
#define RVERBS_CPP_TEST_HARNESS_HPP

#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace harness {

struct failure {
	std::string what;
};
struct skipped {
	std::string why;
};

using case_fn = void (*)();

inline std::vector<std::pair<const char *, case_fn>> &cases()
{
	static std::vector<std::pair<const char *, case_fn>> v;
	return v;
}

struct registrar {
	registrar(const char *name, case_fn fn) { cases().emplace_back(name, fn); }
};

inline int run_all()
{
	int passed = 0, failed = 0, skips = 0;
	for (auto &c : cases()) {
		try {
			c.second();
			passed++;
			std::printf("ok   %s\n", c.first);
		} catch (const skipped &s) {
			skips++;
			std::printf("SKIP %s: %s\n", c.first, s.why.c_str());
		} catch (const failure &f) {
			failed++;
			std::printf("FAIL %s: %s\n", c.first, f.what.c_str());
		} catch (const std::exception &e) {
			failed++;
			std::printf("FAIL %s: exception: %s\n", c.first, e.what());
		}
	}
	std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skips);
	if (failed)
		return 1;
	return passed == 0 && skips > 0 ? 77 : 0;
}

} // namespace harness

#define TEST_CASE(name)                                                          \
	static void name();                                                      \
	static harness::registrar name##_registrar(#name, name);                 \
	static void name()

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond))                                                     \
			throw harness::failure{std::string(__FILE__) + ":" +     \
					       std::to_string(__LINE__) + ": " + #cond}; \
	} while (0)

#define SKIP(why) throw harness::skipped{why}

#endif
