/*
 * cxxstatic.cpp - libstdc++ carried by the program itself (-static-libstdc++,
 * stripped: as Debian's gcc driver and cc1 are built).
 *
 * libstdc++'s static initializer, now code of the executable, allocates
 * its emergency exception pool (72,704 bytes with GCC 5 to 12 on 64-bit
 * machines, 73,728 from GCC 13) and keeps it to the exit: held by the
 * runtime, not leaked.  The program's own: one std::string of 100
 * characters made with new and never deleted (the object, 32 bytes, and
 * its buffer, 101 bytes: 2 blocks, 133 bytes, leaked), and a vector of
 * 1,000 ints filled and dropped (one 4,000-byte block, freed).  No stdio:
 * its buffer would be held by the runtime too.
 */
#include <string>
#include <unistd.h>
#include <vector>

static std::string *kept;

__attribute__((noinline)) static void leak()
{
	kept = new std::string(100, 'x');
}

__attribute__((noinline)) static long drop()
{
	std::vector<int> v(1000, 1);
	long sum = 0;
	for (int x : v)
		sum += x;
	return sum;
}

int main()
{
	leak();
	long n = drop();
	const char msg[] = "cxxstatic: done\n";
	if (write(1, msg, sizeof msg - 1) < 0 || n != 1000)
		return 1;
	return 0;
}
