"""The raw end of a long log, which holds its tail: all a stream keeps of a log once it is
known to be long (core/logs.py)."""

from __future__ import annotations


class LogEnd:
    """The last `keep` bytes (at least) of a log up to its last byte that is not a line break
    (no byte of a UTF-8 character or of an invalid sequence is one): the end of the text the
    report strips. A run of breaks waits apart until text follows it; memory stays within
    4 * keep. A tail taken from `keep` >= BYTE_LIMIT + 4 bytes is the whole text's (logs.py
    keeps MIN_KEEP at the least), as in logfiles._tail_of: the texts agree from a character's
    first byte on, and the tail is cut inside more than BYTE_LIMIT bytes, after the first.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.body = bytearray()
        self.run = bytearray()
        self.cut = False  # bytes before `body` were dropped

    def add(self, chunk: bytes) -> None:
        stripped = chunk.rstrip(b"\r\n")
        if stripped:
            self.body += self.run
            self.body += stripped
            self.run = bytearray(chunk[len(stripped) :])
            self.cut |= self._bound(self.body)
        else:
            self.run += chunk
            self._bound(self.run)

    def _bound(self, data: bytearray) -> bool:
        """Keep `data` within 2 * keep bytes (its last keep); whether any went."""
        if len(data) <= 2 * self.keep:
            return False
        del data[: len(data) - self.keep]
        return True

    def text(self) -> str:
        """The end of the stripped text, decoded from a character's first byte."""
        return decode_end(bytes(self.body), cut=self.cut)


def decode_end(data: bytes, *, cut: bool) -> str:
    """The end of a log as its whole decoding has it from here on: where `cut` inside the log
    (maybe inside a character), decoded after at most 3 continuation bytes, a character's own
    (a stray one further on is a character of its own, as in the whole log)."""
    skip = 0
    while cut and skip < min(3, len(data)) and 0x80 <= data[skip] <= 0xBF:
        skip += 1
    return data[skip:].decode("utf-8", errors="replace")
