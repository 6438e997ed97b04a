#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""The README's two commands on a fresh Debian 12 machine, as a newcomer runs them.

    python3 dev/fresh_debian.py                 as root, on a machine with no sudo
    python3 dev/fresh_debian.py --user          as a user who has sudo
    python3 dev/fresh_debian.py --all-tests     the whole test command, not only its set-up
    python3 dev/fresh_debian.py --quick         the contributor's quick run, as a user without root

It makes a fresh Debian 12 root (debootstrap bookworm, minbase, with only python3, git and
ca-certificates added: what cloning the repository takes), clones this repository into it
and runs there, as root or as the user "reader" (with sudo, which asks no password here):

    python3 dev/demo.py
    python3 dev/test.py --setup-only     (python3 dev/test.py with --all-tests)

--quick instead runs, as the user "contributor" (no sudo, no root), python3 dev/test.py --quick
with nothing installed, which must fail at once with one line saying what to install; then
installs as root, with apt-get, the packages that line names, and runs it again: its tests
must pass.

Nothing of the project is in the root before: no calibre, no compiler, no llama.cpp, no
model, no host. Each command's time and the tail of its output are printed; the whole
output is kept in build/fresh/<root name>/. The root gets what every machine here has
and a newcomer never sets up: this machine's Debian mirror and its apt settings, and
its extra CA certificates (the network's own), nothing else.

--uncommitted clones the working tree as it is now (a snapshot commit under
refs/bookai/fresh, removed afterwards) instead of the last commit. The root is
deleted afterwards unless --keep. Needs root on this machine (debootstrap, chroot).
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import hosts  # noqa: E402

USER = 'reader'
CONTRIBUTOR = 'contributor'  # --quick's user: no sudo
CLONE = '/srv/bookai-origin'  # where this repository is seen inside the root, read-only
SNAPSHOT_REF = 'refs/bookai/fresh'
# the environment a shell here has that says how to trust this network's certificates
PASS_ENV = ('SSL_CERT_FILE', 'SSL_CERT_DIR', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'NODE_EXTRA_CA_CERTS', 'CURL_CA_BUNDLE',
            'GIT_SSL_CAINFO', 'http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY')


def git_dir(which='--git-dir'):
    """This repository's git folder (--git-common-dir: the one a worktree's shares), as an absolute path."""
    return subprocess.run(['git', '-C', str(PROJECT), 'rev-parse', '--path-format=absolute', which],
                          check=True, capture_output=True, text=True).stdout.strip()


def say(*args):
    print('[fresh]', *args, flush=True)


def make_root(root, user):
    include = 'python3,git,ca-certificates' + (',sudo' if user == USER else '')
    say(f'debootstrap bookworm into {root} (minbase + {include})')
    subprocess.run(['debootstrap', '--variant=minbase', f'--include={include}', 'bookworm', str(root),
                    hosts.apt_mirror()], check=True, stdout=subprocess.DEVNULL)
    # what every machine here has: the mirror's apt settings and the network's CA certificates
    for conf in Path('/etc/apt/apt.conf.d').iterdir():
        if conf.is_file() and 'Acquire::' in conf.read_text(errors='replace'):
            shutil.copy(conf, root / 'etc/apt/apt.conf.d' / conf.name)
    for cert in Path('/usr/local/share/ca-certificates').glob('*.crt'):
        shutil.copy(cert, root / 'usr/local/share/ca-certificates' / cert.name)
    script = 'update-ca-certificates >/dev/null'
    if user == USER:
        script += (f' && useradd --create-home --shell /bin/bash --groups sudo {USER}'
                   f' && echo "{USER} ALL=(ALL) NOPASSWD: ALL" > /etc/sudoers.d/{USER}'
                   f' && chmod 0440 /etc/sudoers.d/{USER}')
    elif user:
        script += f' && useradd --create-home --shell /bin/bash {user}'
    enter(root, ['sh', '-c', script], as_user=None)


def enter(root, argv, as_user, log=None, cwd='/'):
    """Run argv inside root (as root, or as the user as_user names), with proc, sys,
    a private /tmp and /dev/shm, and this repository read-only at CLONE."""
    q = shlex.quote
    r = str(root)
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    env.update(LANG='C.UTF-8', PATH='/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
               HOME=f'/home/{as_user}' if as_user else '/root', TERM='dumb')
    command = f'cd {q(cwd)} && exec ' + ' '.join(q(a) for a in argv)
    inner = ['chroot', r, '/usr/bin/env', '-i'] + [f'{k}={v}' for k, v in env.items()]
    if as_user:  # runuser keeps this environment, and gives the user their groups (sudo)
        inner += ['runuser', '-u', as_user, '--']
    inner += ['/bin/sh', '-c', command]
    lines = [
        'set -e',
        # the root a mount point of its own, as / is on a machine: unshare --propagation needs it
        f'mount --bind {q(r)} {q(r)}',
        f'mount -t proc proc {q(r + "/proc")}',
        f'mount -t sysfs sys {q(r + "/sys")}',
        f'mkdir -p {q(r + "/dev/shm")} && mount -t tmpfs -o mode=1777 tmpfs {q(r + "/dev/shm")}',
        f'mkdir -p {q(r + "/dev/pts")} && mount -t devpts -o newinstance,ptmxmode=0666 devpts {q(r + "/dev/pts")}',
        f'mount -t tmpfs -o mode=1777 tmpfs {q(r + "/tmp")}',
        f'mount -t tmpfs tmpfs {q(r + "/run")} && mkdir -p {q(r + "/run/lock")}',
        f'cp -f /etc/resolv.conf {q(r + "/etc/resolv.conf")}',
        f'mkdir -p {q(r + CLONE)} && mount --bind -o ro {q(str(PROJECT))} {q(r + CLONE)}',
    ]
    common = git_dir('--git-common-dir')
    if not common.startswith(f'{PROJECT}/'):  # a worktree's .git names its repository's by its path here
        lines.append(f'mkdir -p {q(r + common)} && mount --bind -o ro {q(common)} {q(r + common)}')
    lines.append('exec ' + ' '.join(q(a) for a in inner))
    argv = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', '\n'.join(lines)]
    if log is None:
        return subprocess.run(argv, check=True)
    with open(log, 'w') as f:
        return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT)


def run_logged(root, command, user, log, cwd):
    """Run command inside root, its output in log; print its exit code, time and last lines."""
    say('$', ' '.join(command), f'(as {user or "root"}, output in {log})')
    t = time.monotonic()
    code = enter(root, command, user, log=log, cwd=cwd).returncode
    say(f'exit {code} after {time.monotonic() - t:.0f} s; its last lines:')
    print(''.join(log.read_text(errors='replace').splitlines(keepends=True)[-25:]), flush=True)
    return code


def quick(root, logs, home):
    """--quick: the quick run with nothing installed must say in one line what to install and
    fail; with what that line names installed by root, it must pass. Returns 0 when both hold."""
    command = ['python3', 'dev/test.py', '--quick']
    if run_logged(root, command, CONTRIBUTOR, logs / 'quick-bare.log', f'{home}/bookai') == 0:
        say('FAILED: the quick run passed with nothing installed')
        return 1
    hint = ((logs / 'quick-bare.log').read_text(errors='replace').strip().splitlines() or [''])[-1]
    say('its last line, verbatim:', hint)
    named = re.search(r'apt-get install ([a-z0-9.+ -]+)$', hint)
    if not named:
        say('FAILED: it names nothing to install')
        return 1
    script = 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ' + named.group(1)
    if run_logged(root, ['sh', '-c', script], None, logs / 'quick-install.log', '/'):
        return 1
    return run_logged(root, command, CONTRIBUTOR, logs / 'quick.log', f'{home}/bookai')


def snapshot():
    """A commit of the working tree as it is (tracked and new files, less what .gitignore leaves out)."""
    env = dict(os.environ, GIT_INDEX_FILE=os.path.join(git_dir(), 'bookai-fresh-index'))
    git = ['git', '-C', str(PROJECT)]
    subprocess.run(git + ['read-tree', 'HEAD'], env=env, check=True)
    subprocess.run(git + ['add', '-A'], env=env, check=True)
    tree = subprocess.run(git + ['write-tree'], env=env, check=True, capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(git + ['commit-tree', tree, '-p', 'HEAD', '-m', 'working tree, for dev/fresh_debian.py'],
                            env=env, check=True, capture_output=True, text=True).stdout.strip()
    Path(env['GIT_INDEX_FILE']).unlink()
    subprocess.run(git + ['update-ref', SNAPSHOT_REF, commit], check=True)
    return commit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--user', action='store_true', help=f'run the commands as "{USER}", a user with sudo')
    ap.add_argument('--all-tests', action='store_true', help='run the whole test command, not only its set-up')
    ap.add_argument('--quick', action='store_true',
                    help=f'the quick run as "{CONTRIBUTOR}", a user without sudo, before and after its hint')
    ap.add_argument('--uncommitted', action='store_true', help='clone the working tree as it is now')
    ap.add_argument('--root', type=Path, help='where to make the root (default /var/tmp/bookai-fresh-root|user|quick)')
    ap.add_argument('--keep', action='store_true', help='keep the root afterwards')
    a = ap.parse_args(argv)
    if a.quick and (a.user or a.all_tests):
        ap.error('--quick runs the quick run only, as its own user')
    if os.geteuid() != 0:
        raise SystemExit('dev/fresh_debian.py needs root on this machine (debootstrap, chroot)')
    user = CONTRIBUTOR if a.quick else USER if a.user else None
    name = 'quick' if a.quick else 'user' if a.user else 'root'
    root = a.root or Path(f'/var/tmp/bookai-fresh-{name}')
    logs = PROJECT / 'build' / 'fresh' / name
    logs.mkdir(parents=True, exist_ok=True)
    if root.exists():
        shutil.rmtree(root)
    start = time.monotonic()
    make_root(root, user)
    say(f'fresh Debian 12 root made in {time.monotonic() - start:.0f} s')
    home = f'/home/{user}' if user else '/root'
    commit = snapshot() if a.uncommitted else 'HEAD'
    try:
        clone = f'git clone -q {CLONE} bookai'
        if a.uncommitted:
            clone += f' && cd bookai && git fetch -q origin {SNAPSHOT_REF} && git checkout -q FETCH_HEAD'
        if user:  # the user's own clone (as root: git refuses a repository owned by another user)
            clone += f' && chown -R {user}:{user} {home}/bookai'
        enter(root, ['sh', '-c', clone], None, cwd=home)
    finally:
        if a.uncommitted:
            subprocess.run(['git', '-C', str(PROJECT), 'update-ref', '-d', SNAPSHOT_REF], check=True)
    say(f'cloned {commit} into {home}/bookai, as {user or "root"}')
    commands = [['python3', 'dev/demo.py'], ['python3', 'dev/test.py'] + ([] if a.all_tests else ['--setup-only'])]
    status = quick(root, logs, home) if a.quick else 0
    for command in [] if a.quick else commands:
        status = run_logged(root, command, user, logs / (Path(command[1]).stem + '.log'), f'{home}/bookai')
        if status:
            break
    say(f'all done in {time.monotonic() - start:.0f} s: {"ok" if status == 0 else "FAILED"}')
    if not a.keep:
        shutil.rmtree(root)
    return status


if __name__ == '__main__':
    sys.exit(main())
