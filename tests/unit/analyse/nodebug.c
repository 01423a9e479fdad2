/* nodebug.c - a library built without debug info, for test_symbols to
 * resolve through the ELF symbol table alone.  Two functions carry mangled
 * names (C++ and legacy Rust) given by assembler labels, to check that
 * symbol table names get demangled too. */
#include <stdint.h>

uint64_t symtest_nodebug_function(uint64_t x);
uint64_t symtest_cxx_mangled(uint64_t x) __asm__("_ZN7mtspace6helperEm");
uint64_t symtest_rust_mangled(uint64_t x) __asm__("_ZN6mtrust5inner4work17h0123456789abcdefE");

__attribute__((noinline)) uint64_t symtest_nodebug_function(uint64_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

__attribute__((noinline)) uint64_t symtest_cxx_mangled(uint64_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 5 + 2;
}

__attribute__((noinline)) uint64_t symtest_rust_mangled(uint64_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 7 + 3;
}
