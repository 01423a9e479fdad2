// test_symbols_cpp.cpp - the C++ part of test_symbols: a member function
// in a namespace, whose name must come back demangled and qualified.
#include <cstdint>

extern "C" uint64_t sym_test_here(void);
extern "C" uint64_t sym_test_cpp_probe(int *line);

namespace mtns {
struct Widget {
	static uint64_t method(int x, int *line);
};

#ifdef __clang__
__attribute__((noinline))
#else
__attribute__((noinline, noclone))
#endif
uint64_t Widget::method(int x, int *line)
{
	uint64_t a = sym_test_here(); *line = __LINE__ + x - 1;
	return a;
}
} // namespace mtns

uint64_t sym_test_cpp_probe(int *line)
{
	return mtns::Widget::method(1, line);
}
