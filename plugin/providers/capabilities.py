# License: GPLv3 Copyright: the Book AI developers
"""What a provider can do besides answering."""

from enum import Flag, auto


class Capability(Flag):
    """What a provider can do besides answering."""
    NONE = 0
    TEXT_TO_TEXT = auto()
    WEB_SEARCH = auto()
    REASONING = auto()
    EMBEDDINGS = auto()
    IMAGE_GENERATION = auto()  # makes an image from words (a cover)
    IMAGE_EDITING = auto()     # changes an image it is given, as words ask (Refine)
    TOOLS = auto()             # its models may call tools (core.messages.Tool): lookups
