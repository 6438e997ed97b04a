# License: GPLv3 Copyright: the Book AI developers
"""Every network connection this process attempts, recorded through Python's audit hooks.

record(report) installs a sys.addaudithook (it cannot be removed: the whole process is
watched from then on) that puts in report['sockets'] each 'socket.connect' to an
AF_INET/AF_INET6 address and each 'socket.getaddrinfo' (a name looked up is a connection
meant), and in report['local_ipc'] the AF_UNIX connects (calibre's own IPC, no network).
Connections made in C++ (Qt's network, QtWebEngine) are not Python's and are not seen.
"""

import socket
import threading

LOOPBACK_NAMES = ('localhost', 'localhost.localdomain', 'ip6-localhost')


def is_loopback(host):
    import ipaddress
    host = str(host).strip('[]').lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.partition('%')[0]).is_loopback
    except ValueError:
        return False


def record(report):
    network, local = report.setdefault('sockets', []), report.setdefault('local_ipc', [])
    lock = threading.Lock()

    def hook(event, args):
        if not event.startswith('socket.'):
            return
        try:
            if event == 'socket.connect':
                sock, address = args
                if sock.family in (socket.AF_INET, socket.AF_INET6):
                    entry = {'event': 'connect', 'host': str(address[0]), 'port': address[1]}
                elif sock.family == socket.AF_UNIX:
                    entry = {'event': 'connect', 'unix': str(address)}
                else:
                    entry = {'event': 'connect', 'family': int(sock.family), 'address': repr(address)}
            elif event == 'socket.getaddrinfo':
                entry = {'event': 'getaddrinfo', 'host': str(args[0]), 'port': args[1]}
            else:
                return
            entry['thread'] = threading.current_thread().name
            with lock:
                (local if 'unix' in entry else network).append(entry)
        except Exception as e:  # an audit hook must never raise into the code it watches
            with lock:
                network.append({'event': event, 'unreadable': repr(e)})

    import sys
    sys.addaudithook(hook)
