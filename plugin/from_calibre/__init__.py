# License: GPLv3 Copyright: the Book AI developers
"""What Book AI takes over from calibre's own AI (calibre 8.11 and later), for readers who
used it and moved to a calibre without it, or want more than it has.

settings.py reads calibre's AI settings (only reads them: calibre's files are never
changed) and carries them over into Book AI's, when the reader agrees. No Qt here: the
offer in the windows (gui/carry_over_offer.py) and the command line's import-calibre share it.
"""
