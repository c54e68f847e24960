"""Byte-level fuzz of whole files (issue 13, "Done when"): corpus scripts with bytes
flipped, inserted (any byte, invalid UTF-8 included), deleted, duplicated and cut,
fed through the path of ``streamjob check FILE`` (read the file, substitute variables,
parse, validate on a scratch catalog). Only StreamJobErrors with a line and a column may
escape. Deterministic by seed; `make test` runs 150 files, the `slow` test 1,000."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from streamjob.client.check import check_script, scratch_catalog
from streamjob.exceptions import StreamJobError
from streamjob.home import Home
from streamjob.script import read_script, substitute

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).parent.parent / "corpus"
SOURCES = [p.read_bytes() for p in sorted((CORPUS / "valid").glob("*.sql"))]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """1-8 random byte-level edits of ``data``."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if not buf:
            buf.extend(rng.randbytes(rng.randint(1, 8)))
            continue
        i = rng.randrange(len(buf))
        op = rng.randrange(6)
        if op == 0:
            buf[i] ^= 1 << rng.randrange(8)  # flip a bit (often invalid UTF-8)
        elif op == 1:
            buf[i:i] = rng.randbytes(rng.randint(1, 4))  # insert any bytes
        elif op == 2:
            del buf[i:i + rng.randint(1, 16)]
        elif op == 3:
            j = rng.randrange(len(buf))
            buf[i:i] = buf[j:j + rng.randint(1, 64)]  # duplicate a chunk elsewhere
        elif op == 4:
            del buf[i:]  # truncate
        else:
            buf[i:i] = rng.choice([b"(" * 50, b"\xff\xfe", b"${X}", b"\x00", b"'", b'"', b"`"])
    return bytes(buf)


def fuzz(tmp_path, files: int, seed: int) -> None:
    rng = random.Random(seed)
    home = Home.open(tmp_path / "home")
    path = tmp_path / "fuzzed.sql"
    errors = 0
    for n in range(files):
        path.write_bytes(mutate(rng.choice(SOURCES), rng))
        try:
            text = substitute(read_script(path), {"X": "x", "STREAMJOB_HOME": str(home.root)},
                              source=str(path))
            check_script(text, str(path), scratch_catalog(None), home)
        except StreamJobError as exc:
            errors += 1
            if "cannot read" in exc.message:
                continue
            assert exc.line is not None and exc.column is not None, (n, exc)
            assert exc.message, n
    assert errors > files // 2  # most mutations break a script: the fuzz reaches the errors


def test_byte_mutated_files_quick(tmp_path):
    fuzz(tmp_path, 150, seed=13)


@pytest.mark.slow
def test_byte_mutated_files_1000(tmp_path):
    fuzz(tmp_path, 1000, seed=2026)
