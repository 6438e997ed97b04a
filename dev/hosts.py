#!/usr/bin/env python3
# License: GPLv3
"""The real calibre hosts Book AI is tested on, prepared and entered.

    dev/hosts.py setup [HOST ...]      make the hosts (all by default); idempotent
    dev/hosts.py run HOST -- CMD ...   run CMD inside HOST, the project at /project
    dev/hosts.py status                which hosts are ready
    dev/hosts.py remove HOST ...       delete a host's root

Hosts (this machine is Debian 12 bookworm; each root is Debian's own calibre package):

    host      calibre               Python  pytest  calibre's own AI (calibre.ai, AIProviderPlugin)
    bookworm  6.13, this machine    3.11    7.2     no
    trixie    8.5, a root           3.13    8.3     no
    forky     9.17, a root          3.14    9.1     yes: its nine built-in providers
    noai      9.17 without AI       3.14    9.1     no: the forky root with calibre's AI removed
                                                    the way an AI-free fork removes it
                                                    (dev/strip_calibre_ai.py): the plugin's real target

The Debian mirror these machines reach is a frozen snapshot, so the versions stay put. The
suite uses nothing newer than pytest 7.2 offers.

How a root is made (about 3 minutes each; `setup` makes them side by side):
- `debootstrap --variant=minbase SUITE ROOT MIRROR .../scripts/sid`: bookworm's debootstrap has
  no script for forky, and sid's works for both. MIRROR is the first .../debian address in
  this machine's own apt sources (apt_mirror), never a name written into the project.
- apt in the root is told Acquire::Check-Valid-Until "false": a snapshot's Release files are
  dated in the past and apt refuses them otherwise. dpkg leaves out docs, man pages and
  locales and uses force-unsafe-io: a root is 1.4 to 1.5 GB once PACKAGES are in.
- A root is too big to keep in a repository (a tarball is about 520 MB): roots are made on
  the machine that runs the tests (CI too) and reused there.

Roots live in $BOOKAI_HOSTS_DIR (default /var/lib/bookai-hosts), outside the
work tree, so a later clone on the same machine reuses them. Commands run in a
root through a private mount namespace: proc, /dev/shm (Qt needs it) and /tmp are
mounted inside it and vanish with it, even after a crash. The machine's /dev is
never bound into a root: deleting a root would then delete the machine's device
files (debootstrap makes the device nodes a root needs). The project is bound in at
/project, the test peers at /peers, and the command runs in a clean environment
(host_env: offscreen Qt, BOOKAI_*, CALIBRE_*, QT_* and CI passed through). Needs root.

In every host, Python code runs in calibre's own runtime: Debian puts calibre's
modules in /usr/lib/calibre, where plain python3 does not look, so dev/test.py runs
pytest through `calibre-debug -c` (and the tests run calibre's programs, calibre-debug -e
for scripts). QT_QPA_PLATFORM=offscreen is all widgets, dialogs and the viewer need: no
X server. calibre's main window waits in its first-run wizard unless the test config
says it has run (dynamic's welcome_wizard_was_run).

`run --isolated` (what dev/test.py uses) also gives the command a network
namespace of its own with only loopback: calibre allows one running GUI per
user and network namespace, so a test calibre never meets the user's calibre
or another host's, and nothing in a test can reach beyond this machine.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
HOSTS_DIR = Path(os.environ.get('BOOKAI_HOSTS_DIR', '/var/lib/bookai-hosts'))
IN_ROOT_PROJECT = '/project'
# The test peers (llama-server, models, aimock, SDKs; dev/peers.py makes them),
# seen inside every root at /peers. Tests find them through $BOOKAI_PEERS.
PEERS_DIR = Path(os.environ.get('BOOKAI_PEERS_DIR', '/var/cache/bookai-peers'))
IN_ROOT_PEERS = '/peers'

# What every host needs for the test suite. Changing this list makes `setup`
# install the difference into existing roots, it does not rebuild them.
PACKAGES = ('calibre', 'python3-pytest', 'fonts-dejavu-core', 'gettext', 'nodejs',
            # the Secret Service the key tests store into (gnome-keyring under dbus-run-session), the
            # D-Bus client calibre itself uses (jeepney), and hypothesis for fuzzing the decoders
            'gnome-keyring', 'dbus-daemon', 'python3-jeepney', 'python3-hypothesis')

HOSTS = {
    'bookworm': {'calibre': '6.13', 'suite': None},
    'trixie': {'calibre': '8.5', 'suite': 'trixie'},
    'forky': {'calibre': '9.17', 'suite': 'forky'},
    'noai': {'calibre': '9.17 without AI', 'suite': None, 'from': 'forky'},
}

DPKG_EXCLUDES = '''\
path-exclude=/usr/share/doc/*
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
'''


# Variables passed from the caller into a host; everything else is cleared.
PASS_ENV_PREFIXES = ('BOOKAI_', 'CALIBRE_', 'QT_', 'CI')


def log(*args):
    print('[hosts]', *args, file=sys.stderr, flush=True)


def root_of(host):
    return None if host == 'bookworm' else HOSTS_DIR / host


def stamp_of(root):
    return root / '.bookai-host'


def host_env(extra=None):
    env = {
        'HOME': '/root', 'LANG': 'C.UTF-8', 'LC_ALL': 'C.UTF-8',
        'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        'QT_QPA_PLATFORM': 'offscreen', 'QTWEBENGINE_DISABLE_SANDBOX': '1',
        'PYTHONDONTWRITEBYTECODE': '1', 'DEBIAN_FRONTEND': 'noninteractive',
    }
    for k, v in os.environ.items():
        if k.startswith(PASS_ENV_PREFIXES):
            env[k] = v
    env.update(extra or {})
    return env


def in_root_command(root, argv, env, cwd=IN_ROOT_PROJECT, bind_project=True, isolated=False):
    """The shell command that runs argv inside root in a throwaway mount namespace."""
    q = shlex.quote
    r = str(root)
    lines = [
        'set -e',
        'ip link set lo up' if isolated else ':',
        f'mount -t proc proc {q(r + "/proc")}',
        f'mkdir -p {q(r + "/dev/shm")} && mount -t tmpfs -o mode=1777 tmpfs {q(r + "/dev/shm")}',
        f'mount -t tmpfs -o mode=1777 tmpfs {q(r + "/tmp")}',
        f'cp -f /etc/resolv.conf {q(r + "/etc/resolv.conf")} 2>/dev/null || true',
    ]
    if bind_project:
        lines.append(f'mkdir -p {q(r + IN_ROOT_PROJECT)} && mount --bind {q(str(PROJECT))} {q(r + IN_ROOT_PROJECT)}')
        if PEERS_DIR.is_dir():
            lines.append(f'mkdir -p {q(r + IN_ROOT_PEERS)} && mount --bind {q(str(PEERS_DIR))} {q(r + IN_ROOT_PEERS)}')
    else:
        cwd = '/'
    envs = ' '.join(q(f'{k}={v}') for k, v in sorted(env.items()))
    cmd = ' '.join(q(a) for a in argv)
    lines.append(f'exec chroot {q(r)} /usr/bin/env -i {envs} /bin/sh -c {q("cd " + q(cwd) + " && exec " + cmd)}')
    return namespaces(isolated) + ['sh', '-c', '\n'.join(lines)]


def namespaces(isolated):
    return ['unshare', '--mount', '--propagation', 'private'] + (['--net'] if isolated else [])


def run(host, argv, env=None, check=True, bind_project=True, isolated=False, **kw):
    """Run argv in host. For bookworm that is this machine, in the project folder."""
    env = host_env(env)
    root = root_of(host)
    env.setdefault('BOOKAI_PEERS', str(PEERS_DIR) if root is None else IN_ROOT_PEERS)
    if root is None:
        full = dict(os.environ)
        full.update(env)
        full['HOME'] = os.environ.get('HOME', '/root')
        full['PATH'] = os.environ.get('PATH', env['PATH'])
        if isolated:
            argv = namespaces(True) + ['sh', '-c', 'ip link set lo up && exec "$@"', 'sh'] + list(argv)
        return subprocess.run(argv, env=full, cwd=str(PROJECT), check=check, **kw)
    return subprocess.run(in_root_command(root, argv, env, bind_project=bind_project, isolated=isolated),
                          check=check, **kw)


def apt_mirror():
    """The first .../debian URI of this machine's own apt sources."""
    candidates = [Path('/etc/apt/sources.list')] + sorted(Path('/etc/apt/sources.list.d').glob('*'))
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            words = line.split()
            for w in words:
                if w.startswith(('http://', 'https://')) and w.rstrip('/').endswith('/debian'):
                    return w.rstrip('/')
    raise SystemExit('No .../debian URI found in the apt sources of this machine')


def missing_packages(host, packages):
    fmt = '${Package} ${db:Status-Status}\\n'
    r = run(host, ['dpkg-query', '-W', '-f', fmt] + list(packages), check=False,
            capture_output=True, text=True, bind_project=False)
    installed = {ln.split()[0] for ln in r.stdout.splitlines() if ln.endswith(' installed')}
    return [p for p in packages if p not in installed]


def apt_install(host, packages):
    if root_of(host) is None:  # this machine
        machine.install(packages)
        return
    missing = missing_packages(host, packages)
    if not missing:
        return
    log(host, 'installing', ' '.join(missing))
    run(host, ['apt-get', 'update', '-qq'], bind_project=False)
    run(host, ['apt-get', 'install', '-y', '-qq', '--no-install-recommends'] + missing, bind_project=False,
        stdout=subprocess.DEVNULL)


def debootstrap(host, suite):
    root = root_of(host)
    tmp = root.with_name(root.name + '.partial')
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    log(host, f'debootstrap {suite} into {tmp}')
    subprocess.run(['debootstrap', '--variant=minbase', suite, str(tmp), apt_mirror(),
                    '/usr/share/debootstrap/scripts/sid'], check=True, stdout=subprocess.DEVNULL)
    (tmp / 'etc/apt/apt.conf.d/99bookai-snapshot').write_text(
        'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n')
    (tmp / 'etc/dpkg/dpkg.cfg.d/01bookai-nodoc').write_text(DPKG_EXCLUDES)
    (tmp / 'etc/dpkg/dpkg.cfg.d/02bookai-unsafe-io').write_text('force-unsafe-io\n')
    tmp.rename(root)


def strip_ai(host, source):
    """Copy the source root and remove calibre's AI from the copy."""
    root = root_of(host)
    tmp = root.with_name(root.name + '.partial')
    if tmp.exists():
        shutil.rmtree(tmp)
    log(host, f'copying {source} and removing calibre\'s AI')
    subprocess.run(['cp', '-a', str(root_of(source)), str(tmp)], check=True)
    stamp_of(tmp).unlink(missing_ok=True)
    subprocess.run([sys.executable, str(PROJECT / 'dev/strip_calibre_ai.py'), str(tmp / 'usr/lib/calibre/calibre')],
                   check=True)
    tmp.rename(root)


def smoke_test(host):
    """calibre-debug, calibre and ebook-viewer must start; calibre.ai must import only where it exists."""
    code = ('import importlib.util, calibre.constants as c; '
            'print(".".join(map(str, c.numeric_version[:2])), bool(importlib.util.find_spec("calibre.ai")))')
    r = run(host, ['calibre-debug', '-c', code], capture_output=True, text=True, bind_project=False)
    version, has_ai = r.stdout.split()[-2:]
    return version, has_ai == 'True'


def ensure_machine_packages():
    machine.install(machine.HOSTS)  # one apt at a time on this machine: see dev/machine.py


def recipe(host):
    """What a host's root was made from; a derived root is remade when this changes."""
    text = ' '.join(PACKAGES)
    if HOSTS[host].get('from'):
        import hashlib
        text += ' strip:' + hashlib.sha256((PROJECT / 'dev/strip_calibre_ai.py').read_bytes()).hexdigest()[:16]
    return text + '\n'


def setup(hosts):
    ensure_machine_packages()
    for host in hosts:
        with machine.held(str(HOSTS_DIR / f'.{host}.lock')):  # two commands making one root wait for each other
            setup_host(host)


def setup_host(host):
    spec = HOSTS[host]
    root = root_of(host)
    if root is not None and spec.get('from') and root.exists() and (
            not stamp_of(root).exists() or stamp_of(root).read_text() != recipe(host)):
        log(host, 'its recipe changed: making it again')
        shutil.rmtree(root)
    if root is None:
        apt_install(host, PACKAGES)
    elif not root.exists():
        if spec.get('from'):
            setup([spec['from']])
            strip_ai(host, spec['from'])
        else:
            debootstrap(host, spec['suite'])
    if root is not None and spec.get('from') is None:
        apt_install(host, PACKAGES)
    if root is not None:
        stamp_of(root).write_text(recipe(host))
    version, has_ai = smoke_test(host)
    expect_ai = host == 'forky'
    if has_ai != expect_ai:
        raise SystemExit(f'{host}: calibre.ai importable = {has_ai}, expected {expect_ai}')
    log(host, f'ready: calibre {version}, calibre.ai {"present" if has_ai else "absent"}')


def setup_parallel(hosts):
    """Debootstrapping is network and dpkg bound: make the roots side by side."""
    hosts = sorted(hosts, key=lambda h: bool(HOSTS[h].get('from')))  # a derived root after its source
    todo = [h for h in hosts if root_of(h) is not None and not root_of(h).exists() and not HOSTS[h].get('from')]
    procs = [subprocess.Popen([sys.executable, __file__, 'setup', h]) for h in todo]
    others = [h for h in hosts if h not in todo]
    for p in procs:
        if p.wait() != 0:
            raise SystemExit('setting up a host failed')
    setup(others)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('setup')
    s.add_argument('hosts', nargs='*', metavar='HOST', help=', '.join(HOSTS))
    r = sub.add_parser('run')
    r.add_argument('--isolated', action='store_true', help='in a network namespace with only loopback')
    r.add_argument('host', choices=list(HOSTS))
    r.add_argument('argv', nargs=argparse.REMAINDER)
    sub.add_parser('status')
    rm = sub.add_parser('remove')
    rm.add_argument('hosts', nargs='+', choices=list(HOSTS))
    a = ap.parse_args(argv)
    if a.cmd != 'status' and os.geteuid() != 0:
        raise SystemExit('dev/hosts.py needs root (debootstrap, chroot, mount namespaces)')
    if a.cmd == 'setup':
        hosts = a.hosts or list(HOSTS)
        unknown = set(hosts) - set(HOSTS)
        if unknown:
            ap.error(f'unknown host(s): {", ".join(sorted(unknown))}; known: {", ".join(HOSTS)}')
        if len(hosts) > 1:
            setup_parallel(hosts)
        else:
            setup(hosts)
    elif a.cmd == 'run':
        argv = a.argv[1:] if a.argv[:1] == ['--'] else a.argv
        return run(a.host, argv, check=False, isolated=a.isolated).returncode
    elif a.cmd == 'status':
        for host, spec in HOSTS.items():
            root = root_of(host)
            ready = shutil.which('calibre-debug') if root is None else stamp_of(root).exists()
            print(f'{host:9} calibre {spec["calibre"]:16} {"ready" if ready else "missing"}')
    elif a.cmd == 'remove':
        for host in a.hosts:
            root = root_of(host)
            if root is not None and root.exists():
                shutil.rmtree(root)
    return 0


if __name__ == '__main__':
    sys.exit(main())
