#!/usr/bin/env python3
"""style.py - every C file of src/ is laid out as .clang-format says.

  style.py CLANG_FORMAT SOURCE_ROOT

Runs clang-format --dry-run --Werror on each tracked .c and .h file under
src/ and lists the files it would change (fix them with clang-format -i).
"""
import subprocess
import sys


def main():
    clang_format, root = sys.argv[1], sys.argv[2]
    files = subprocess.run(['git', '-C', root, 'ls-files', 'src/*.c', 'src/*.h'],
                           capture_output=True, text=True, check=True).stdout.split()
    bad = []
    for f in files:
        r = subprocess.run([clang_format, '--dry-run', '--Werror', f], cwd=root,
                           capture_output=True, text=True)
        if r.returncode:
            bad.append(f)
    for f in bad:
        print('not formatted: %s (clang-format -i %s)' % (f, f))
    print('%d of %d files formatted' % (len(files) - len(bad), len(files)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
