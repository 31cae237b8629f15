"""The one capped reader (:mod:`dpviz.core.reader`): every cap at exactly N and N + 1, gzip (bombs,
corrupt and truncated streams), byte-order marks, NUL bytes, encodings, FIFOs, and the source kinds
(path, str, bytes, bytearray, memoryview, binary and text file objects)."""

from __future__ import annotations

import doctest
import gzip
import io
import os
import re

import pytest

from dpviz.core import reader
from dpviz.core.reader import Cap, Wording, decode, line_number, read_capped
from dpviz.errors import InputError

W = Wording(call="load_thing", rows="data rows",
            row_cap=Cap("MAX_ROWS", "--max-rows", "max_rows", " (counted while reading), above the row cap", "rows"))


def test_doctests():
    assert doctest.testmod(reader).failed == 0


def _sources(raw: bytes, tmp_path):
    p = tmp_path / "f.csv"
    p.write_bytes(raw)
    return [raw, bytearray(raw), memoryview(raw), p, str(p), io.BytesIO(raw)]


@pytest.mark.parametrize("n", [0, 1, 7, 5 * reader.CHUNK // 4])
def test_every_source_kind_reads_the_same_bytes(tmp_path, n):
    raw = (b"a,b\n" + b"1,2\n" * (n // 4 + 1))[:max(n, 1)]
    for src in _sources(raw, tmp_path):
        got = read_capped(src, max_bytes=len(raw))
        assert bytes(got.data) == raw and not got.gzip
    got = read_capped(tmp_path / "f.csv", max_bytes=len(raw), use_mmap=True)
    assert bytes(got.data[:]) == raw and got.path == tmp_path / "f.csv" and got.label == "'f.csv'"


def test_text_file_objects_are_encoded_as_utf8():
    assert bytes(read_capped(io.StringIO("é,1\n"), max_bytes=10).data) == "é,1\n".encode()


def test_byte_cap_at_exactly_n_and_n_plus_one(tmp_path):
    raw = b"a,b\n1,2\n"
    for src in _sources(raw, tmp_path):
        assert bytes(read_capped(src, max_bytes=len(raw), wording=W).data) == raw
    for src in _sources(raw, tmp_path):
        with pytest.raises(InputError) as exc:
            read_capped(src, max_bytes=len(raw) - 1, wording=W)
        msg = str(exc.value)
        assert "above the size cap; the limit is 7 bytes (MAX_BYTES); raise it with the CLI flag --max-bytes N or " \
               "load_thing(..., max_bytes=N)" in msg, msg
    with pytest.raises(InputError, match=r"^'f.csv' is 8 bytes, above the size cap; the limit is 7 bytes"):
        read_capped(tmp_path / "f.csv", max_bytes=7)  # from stat, before reading
    with pytest.raises(InputError, match=r"^'f.csv' is more than 7 bytes, above the size cap"):  # while reading
        read_capped(io.BytesIO(raw), max_bytes=7, label="'f.csv'")


def test_row_cap_at_exactly_n_and_n_plus_one_blank_lines_free():
    rows = b"h\n" + b"".join(b"%d\n\n\r\n" % i for i in range(10))  # 10 rows, 31 lines
    assert read_capped(rows, max_bytes=10**6, max_rows=10).rows == 11  # with the header
    with pytest.raises(InputError) as exc:
        read_capped(rows, max_bytes=10**6, max_rows=9, wording=W)
    assert str(exc.value) == ("the upload has more than 9 data rows (counted while reading), above the row cap; the "
                              "limit is 9 rows (MAX_ROWS); raise it with the CLI flag --max-rows N or "
                              "load_thing(..., max_rows=N)")
    # the last line without its line end counts too; header=0 allows no header
    assert read_capped(b"1\n2", max_bytes=10, max_rows=2, header=0).rows is None  # well under the cap: not counted
    assert read_capped(b"1\n\n2", max_bytes=10, max_rows=1, header=1).rows == 2  # near the cap: counted
    with pytest.raises(InputError, match="more than 1 data rows"):
        read_capped(b"1\n2", max_bytes=10, max_rows=1, header=0)


def test_row_cap_with_a_skip_pattern_counts_the_skipped_lines():
    skip = re.compile(rb"(?m)^[ \t\r]*(?:#[^\n]*)?\n")
    raw = b"# c\n0,1\n\n  \n1,2\n# end"
    got = read_capped(raw, max_bytes=100, max_rows=1, skip=skip)
    assert (got.rows, got.skipped) == (2, 4)
    with pytest.raises(InputError, match="more than 1 data rows"):
        read_capped(raw + b"\n2,3\n", max_bytes=100, max_rows=1, skip=skip)


def test_rows_are_counted_across_chunks(tmp_path):
    n = reader.CHUNK // 2  # two-byte rows: the file spans two chunks and a row is cut by the boundary
    raw = b"h\n" + b"x\n" * n + b"\n" * 100
    p = tmp_path / "big.csv"
    p.write_bytes(raw)
    assert read_capped(p, max_bytes=len(raw), max_rows=n).rows == n + 1
    with pytest.raises(InputError, match=f"more than {n - 1:,} data rows"):
        read_capped(p, max_bytes=len(raw), max_rows=n - 1)


def test_line_cap_at_exactly_n_and_n_plus_one_names_the_line():
    ok = b"ab\r\nabcd\rabc\nx"
    assert bytes(read_capped(ok, max_bytes=100, max_line_bytes=4).data) == ok
    with pytest.raises(InputError) as exc:
        read_capped(ok, max_bytes=100, max_line_bytes=3, wording=W)
    assert str(exc.value) == ("the upload, line 2: longer than 3 bytes, above the line cap; the limit is 3 bytes "
                              "(MAX_LINE_BYTES); raise it with the CLI flag --max-line-bytes N or "
                              "load_thing(..., max_line_bytes=N)")
    with pytest.raises(InputError, match="line 1: longer than 5 bytes"):  # one endless line: refused on its chunk
        read_capped(io.BytesIO(b"x" * (3 * reader.CHUNK)), max_bytes=10**9, max_line_bytes=5)


def test_a_gzip_bomb_stops_at_the_cap_and_bad_gzip_is_refused(tmp_path):
    text = b"a,b\n" + b"1,2\n" * 250_000  # 1 MB of text, a few kB compressed
    bomb = gzip.compress(text)
    assert len(bomb) < 10_000
    for src in _sources(bomb, tmp_path):
        got = read_capped(src, max_bytes=len(text))
        assert got.gzip and bytes(got.data) == text
    for src in _sources(bomb, tmp_path):
        with pytest.raises(InputError, match=f"decompresses to more than {len(text) - 1:,} bytes, above the size cap"):
            read_capped(src, max_bytes=len(text) - 1)
    with pytest.raises(InputError, match="more than 10 data rows"):  # rows counted on the decompressed bytes
        read_capped(bomb, max_bytes=10**7, max_rows=10)
    with pytest.raises(InputError, match="truncated gzip"):
        read_capped(bomb[:-12], max_bytes=10**7)
    with pytest.raises(InputError, match="starts like a gzip file but cannot be decompressed"):
        read_capped(b"\x1f\x8bnot really gzip", max_bytes=100)
    assert bytes(read_capped(b"\x1f\x8bxx", max_bytes=100, gzip=False).data) == b"\x1f\x8bxx"


def test_nul_bytes_are_refused_naming_their_line_when_asked():
    raw = b"a,b\r\nx,1\ry\0,2\n"
    assert bytes(read_capped(raw, max_bytes=100).data) == raw  # the tree reader lets NUL through
    with pytest.raises(InputError) as exc:
        read_capped(raw, max_bytes=100, refuse_nul=True)
    assert str(exc.value) == ("the upload, line 3: a NUL byte; expected text (UTF-8 or Latin-1), not a binary or "
                              "UTF-16 file")
    with pytest.raises(InputError, match="line 1: a NUL byte.*UTF-16"):
        read_capped("a,b\n1,2\n".encode("utf-16"), max_bytes=100, refuse_nul=True)
    with pytest.raises(InputError, match="line 2: a NUL byte"):  # inside gzip: the decompressed text's line
        read_capped(gzip.compress(b"a\nb\0\n"), max_bytes=100, refuse_nul=True)


def test_nul_past_the_first_chunk_is_found_in_every_kind_of_source(tmp_path):
    """The NUL search and the row count run in place (no copy of a chunk): in a bytes upload (a memoryview),
    a file object, a path read into a memory map and a gzip stream, the NUL in the second chunk names its line."""
    n = reader.CHUNK // 4 + 10  # four-byte rows: the NUL sits in the second chunk
    raw = b"a,b\n" + b"1,2\n" * n + b"1,\x002\n" + b"3,4\n" * 5
    line = n + 2
    sources = [*_sources(raw, tmp_path), gzip.compress(raw)]
    for src in sources:
        with pytest.raises(InputError, match=f"line {line}: a NUL byte"):
            read_capped(src, max_bytes=len(raw), refuse_nul=True)
    p = tmp_path / "nul.csv"
    p.write_bytes(raw)
    with pytest.raises(InputError, match=f"line {line}: a NUL byte"):
        read_capped(p, max_bytes=len(raw), refuse_nul=True, use_mmap=True)
    ok = raw.replace(b"\x00", b"0")
    p.write_bytes(ok)
    for k in range(len(_sources(ok, tmp_path))):  # fresh sources each time: a file object is read once
        got = read_capped(_sources(ok, tmp_path)[k], max_bytes=len(ok), refuse_nul=True, max_rows=n + 6)
        assert bytes(got.data) == ok  # n + 6 data rows: at the cap, accepted
        with pytest.raises(InputError, match=f"more than {n + 5:,} data rows"):
            read_capped(_sources(ok, tmp_path)[k], max_bytes=len(ok), max_rows=n + 5, use_mmap=k == 3)


def test_decode_drops_boms_and_falls_back_to_latin1():
    bom = reader.BOM
    assert decode(bom + bom + "é,1\n".encode()) == "é,1\n"
    assert decode(b"\xe9,1\n") == "é,1\n"  # not UTF-8: Latin-1
    assert decode(b"\xff\xfe") == "ÿþ"
    assert decode(b"") == ""
    assert reader.strip_boms(bom * 3 + b"x") == 9
    assert line_number(b"a\r\nb\rc\nd", 7) == 4


def test_paths_missing_folders_and_fifos_are_refused_before_opening(tmp_path):
    with pytest.raises(InputError, match=r"^input file '.*nope.csv' does not exist$"):
        read_capped(tmp_path / "nope.csv", max_bytes=10)
    with pytest.raises(InputError, match=r"is a folder; expected a file$"):
        read_capped(tmp_path, max_bytes=10)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"^edge list: .*pipe is a FIFO \(named pipe\); expected a regular file$"):
        read_capped(fifo, max_bytes=10, wording=Wording(what="edge list"))
    with pytest.raises(InputError, match="expected a file path, bytes or a binary file, got int"):
        read_capped(3, max_bytes=10)
    with pytest.raises(InputError, match="max_rows: expected a whole number"):
        read_capped(b"", max_bytes=10, max_rows=-1)


def test_peek_sees_the_first_chunk_and_may_refuse_early(tmp_path):
    seen = []

    def peek(label, head):
        seen.append((label, head[:4]))
        if head.startswith(b"bad"):
            raise InputError(f"{label}: bad header")

    read_capped(gzip.compress(b"good\n1\n"), max_bytes=100, peek=peek)
    assert seen == [("the upload", b"good")]
    p = tmp_path / "t.csv"
    p.write_bytes(b"bad\n" + b"1\n" * reader.CHUNK)
    with pytest.raises(InputError, match="^'t.csv': bad header$"):
        read_capped(p, max_bytes=10**9, peek=peek, use_mmap=True)


def test_wording_parametrises_only_the_phrases():
    w = Wording(call="read_edges", python_first=True,
                size=Cap("MAX_BYTES", "--max-bytes", "max_bytes", ", above the size cap", ""))
    with pytest.raises(InputError) as exc:
        read_capped(b"0,1\n", max_bytes=3, wording=w)
    assert str(exc.value) == ("the upload is 4 bytes, above the size cap; the limit is 3 (MAX_BYTES); raise it with "
                              "read_edges(..., max_bytes=N) or the CLI flag --max-bytes N")
    w = Wording(call="read_table", python_first=True,
                size=Cap("MAX_BYTES", "--max-bytes", "max_bytes", ", above the limit of {limit} bytes", None))
    with pytest.raises(InputError) as exc:
        read_capped(b"a" * 4014, max_bytes=1000, wording=w, label="'big.csv'")
    assert str(exc.value) == ("'big.csv' is 4,014 bytes, above the limit of 1,000 bytes; raise it with "
                              "read_table(..., max_bytes=N) or the CLI flag --max-bytes N")
    assert Wording(call="f").how(Cap("C", None, "k", "")) == "f(..., k=N)"
