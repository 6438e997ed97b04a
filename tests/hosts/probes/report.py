# License: GPLv3 Copyright: the Book AI developers
"""What a probe tells its test: a JSON report at $BOOKAI_PROBE_OUT, written even when
the program under test hangs (a watchdog ends it and says so)."""

import json
import os
import threading


class Report(dict):

    def __init__(self, **initial):
        super().__init__(timeout=False, **initial)
        self.path = os.environ['BOOKAI_PROBE_OUT']
        self.screenshot = os.environ.get('BOOKAI_PROBE_SCREENSHOT')
        self.watchdog = threading.Timer(float(os.environ.get('BOOKAI_PROBE_TIMEOUT', '120')), self.on_timeout)
        self.watchdog.daemon = True

    def write(self):
        with open(self.path, 'w') as f:
            json.dump(self, f, indent=2)

    def start(self):
        self.watchdog.start()

    def finish(self, exit_code):
        self['exit_code'] = exit_code
        self.write()
        self.watchdog.cancel()

    def on_timeout(self):
        self['timeout'] = True
        self.write()
        os._exit(3)
