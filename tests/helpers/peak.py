# License: GPLv3 Copyright: the Book AI developers
"""This process's peak resident memory while a function runs, as the kernel keeps it (Linux's
VmHWM, reset first through /proc/self/clear_refs): unlike sampling from a thread (helpers.memory),
it also sees a peak reached inside C code that holds Python's lock the whole time (json.loads,
libxml2 parsing a file), and a peak too short for any sampling."""

MB = 1 << 20


def status(field: str) -> int:
    """A field of /proc/self/status given in kB (VmRSS, VmHWM), in bytes."""
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1]) * 1024
    raise OSError(f'no {field} in /proc/self/status')


def peak_growth(fn) -> tuple[object, int]:
    """(what fn returned or raised, the most this process's resident memory grew while it ran)."""
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')  # the high-water mark back to the memory resident now
    base = status('VmRSS')
    try:
        outcome = fn()
    except Exception as e:
        outcome = e
    return outcome, status('VmHWM') - base
