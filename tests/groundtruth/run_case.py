#!/usr/bin/env python3
"""run_case.py NAME ARGS... - runs the ground-truth case NAME.

The expectations of case NAME are in NAME.py next to this file, the program
they describe in NAME.c / NAME.cpp; NAME.py defines run(t, *ARGS) where t is
a gtlib.Case.  Exit status 0 when every check passed, 1 otherwise.
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gtlib  # noqa: E402


def main():
    if len(sys.argv) < 2:
        print('usage: run_case.py NAME [ARGS...]')
        return 2
    name = sys.argv[1]
    spec = importlib.util.spec_from_file_location('gtcase_' + name.replace('-', '_'),
                                                  os.path.join(HERE, name + '.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t = gtlib.Case(name)
    try:
        mod.run(t, *sys.argv[2:])
    except Exception:
        import traceback
        traceback.print_exc()
        t.fail('the case raised an exception (see above)')
    t.finish()


if __name__ == '__main__':
    sys.exit(main())
