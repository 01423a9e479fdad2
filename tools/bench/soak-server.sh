#!/bin/bash
# tools/bench/soak-server.sh: `memtrace server` under many clients at once: how
# fast it answers and how much memory it takes.
#
#   tools/bench/soak-server.sh [-b BUILD_DIR] [-c CLIENTS] [-d SECONDS] [-n ROWS] [-k] [RECORDING]
#
# Without RECORDING, one is made with `memtrace record`: sqlite3 running
# tools/sqlite-workload.sh's script of ROWS rows (default 1,000,000: about
# 3.6 million allocations over a few thousand call sites).  The server is
# started on it on a free loopback port; CLIENTS clients (default 64) then
# ask it for SECONDS seconds (default 60), each in a loop, a mix of what
# the GUI and scripts ask: the list, summaries, call sites (plain, sorted,
# filtered by a regex), single allocations, the timeline, the call tree and
# the flamegraph export.  Every 0.2 s the server's resident set is sampled.
# Printed: requests and errors, latency percentiles p50/p90/p99/max per
# endpoint and overall, and the RSS at start, its peak and at the end.
#
#   -b DIR   memtrace build directory (default $MEMTRACE_BUILD, else build)
#   -k       keep the work directory
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMTRACE_BUILD:-build} clients=64 secs=60 rows=1000000 keep=0
die() { echo "soak-server.sh: error: $*" >&2; exit 1; }
while getopts b:c:d:n:kh opt; do
	case $opt in
	b) build=$OPTARG ;;
	c) clients=$OPTARG ;;
	d) secs=$OPTARG ;;
	n) rows=$OPTARG ;;
	k) keep=1 ;;
	h) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || die "one recording at most"
case $build in /*) ;; *) build=$root/$build ;; esac
memtrace=$build/memtrace
[ -x "$memtrace" ] || die "no $memtrace (meson setup and ninja first)"

work=$(mktemp -d /tmp/soak-server.XXXXXX)
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	[ $keep = 1 ] && echo "work directory kept: $work" || rm -rf "$work"
}
trap cleanup EXIT

if [ $# = 1 ]; then
	rec=$1
else
	command -v sqlite3 >/dev/null || die "sqlite3 is not installed (tools/setup.sh)"
	echo "recording sqlite3 with $rows rows..."
	sh "$root/tools/sqlite-workload.sh" -n "$rows" -o "$work/work.sql"
	"$memtrace" record -q -o "$work/soak.mtrace" -- sqlite3 :memory: ".read $work/work.sql" \
		>/dev/null
	rec=$work/soak.mtrace
fi

for _ in $(seq 20); do
	port=$((20000 + RANDOM % 40000))
	"$memtrace" server --listen "127.0.0.1:$port" "$rec" >"$work/server.out" 2>"$work/server.err" &
	server=$!
	for _ in $(seq 600); do
		grep -q serving "$work/server.out" 2>/dev/null && break
		kill -0 $server 2>/dev/null || break
		sleep 0.1
	done
	grep -q serving "$work/server.out" && break
	wait $server 2>/dev/null || true
	server=
	grep -q "in use" "$work/server.err" || die "the server did not start: $(tail -1 "$work/server.err")"
done
[ -n "$server" ] || die "no free port"

python3 - "$port" "$server" "$clients" "$secs" <<'EOF'
import http.client, sys, threading, time
port, pid, clients, secs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
MIX = [
    ('list', '/list'),
    ('summary', '/data/0/summary'),
    ('groups', '/data/0/allocation_groups?count=20'),
    ('groups', '/data/0/allocation_groups?sort_by=all.allocated_count&count=50'),
    ('groups+regex', '/data/0/allocation_groups?function_regex=%5Esqlite3.*Malloc&count=20'),
    ('allocations', '/data/0/allocations?sort_by=size&order=dsc&count=100'),
    ('timeline', '/data/0/timeline?buckets=100'),
    ('tree', '/data/0/allocation_ascii_tree?view=peak'),
    ('flamegraph.pl', '/data/0/export/flamegraph.pl'),
]
lat = {}
errors = []
lock = threading.Lock()
rss = []
stop = time.time() + secs


def rss_now():
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def sampler():
    while time.time() < stop + 1:
        rss.append(rss_now())
        time.sleep(0.2)


def client(n):
    i = n
    c = None
    while time.time() < stop:
        name, path = MIX[i % len(MIX)]
        i += 1
        t0 = time.time()
        try:
            if c is None:
                c = http.client.HTTPConnection('127.0.0.1', port, timeout=120)
            c.request('GET', path)
            r = c.getresponse()
            r.read()
            ok = r.status == 200
            if r.getheader('Connection', '').lower() == 'close':
                c.close()
                c = None
        except OSError as x:
            ok = False
            c = None
        d = time.time() - t0
        with lock:
            lat.setdefault(name, []).append(d)
            if not ok:
                errors.append(name)


base = rss_now()
th = [threading.Thread(target=client, args=(i,)) for i in range(clients)] + [threading.Thread(target=sampler)]
for t in th:
    t.start()
for t in th:
    t.join()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def row(name, v):
    print(f'{name:<16}{len(v):>8}{pct(v, 50) * 1000:>10.0f}{pct(v, 90) * 1000:>10.0f}'
          f'{pct(v, 99) * 1000:>10.0f}{max(v) * 1000:>10.0f}')


every = [x for v in lat.values() for x in v]
print(f'{clients} clients for {secs:.0f} s: {len(every)} requests ({len(every) / secs:.0f}/s), {len(errors)} errors')
print(f'{"endpoint":<16}{"requests":>8}{"p50 ms":>10}{"p90 ms":>10}{"p99 ms":>10}{"max ms":>10}')
for name in sorted(lat):
    row(name, lat[name])
row('all', every)
print(f'server RSS: {base / 2**20:.0f} MB at start, peak {max(rss + [base]) / 2**20:.0f} MB, '
      f'{rss_now() / 2**20:.0f} MB at the end')
EOF
