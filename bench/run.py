#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Run a benchmark inside a calibre host, with the plugin installed in a throwaway config.

    sudo python3 bench/run.py first_token            (host bookworm by default)
    sudo python3 bench/run.py stream_memory --host noai
    sudo python3 bench/run.py chat_render
    sudo python3 bench/run.py viewer_start --host noai
    sudo python3 bench/run.py line_split
    sudo python3 bench/run.py covers
    sudo python3 bench/run.py structure
    sudo python3 bench/run.py coverage
    sudo python3 bench/run.py caching
    sudo python3 bench/run.py xray_memory
    sudo python3 bench/run.py recap_incremental
    sudo python3 bench/run.py lookups_overhead
    sudo python3 bench/run.py lookups_coverage
    sudo python3 bench/run.py library_search
    sudo python3 bench/run.py library_quality
    sudo python3 bench/run.py library_50k
    sudo python3 bench/run.py metadata_throughput

Benchmarks that need calibre's runtime (the providers) run under calibre-debug
there, in the host's own network namespace with only loopback, starting the
peers they need themselves. Each prints ratios against a baseline measured in
the same run, never absolute pass/fail times.
"""

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / 'dev'))
import hosts  # noqa: E402

SCRIPT = '''
set -e
export QT_QPA_PLATFORM=offscreen CALIBRE_CONFIG_DIRECTORY="$(mktemp -d)" CALIBRE_CACHE_DIRECTORY="$(mktemp -d)"
stage="$(mktemp -d)"
python3 build.py stage --out "$stage" >/dev/null
calibre-customize -b "$stage" >/dev/null
bench="$1"; shift
exec calibre-debug -e "bench/$bench.py" -- "$@"
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('bench', choices=['first_token', 'stream_memory', 'chat_render', 'viewer_start', 'grounding',
                                      'line_split', 'covers', 'structure', 'coverage', 'caching', 'xray_memory',
                                      'recap_incremental', 'lookups_overhead', 'lookups_coverage',
                                      'library_search', 'library_quality', 'library_50k', 'metadata_throughput'])
    ap.add_argument('args', nargs='*', help='passed on to the benchmark')
    ap.add_argument('--host', default='bookworm', choices=list(hosts.HOSTS))
    a = ap.parse_args()
    return hosts.run(a.host, ['sh', '-c', SCRIPT, 'sh', a.bench, *a.args], check=False, isolated=True).returncode


if __name__ == '__main__':
    sys.exit(main())
