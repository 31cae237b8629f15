"""Hostile input on the stream paths (issue 12; issue 11 "Bounded resources", "Streams"): every case is
refused with exit 2, exactly one line on stderr and no output file; the caps are checked before the work;
the streaming step releases the batch numbers; per-step variances are computed once per (mechanism, N, noise)."""

import io
import os

import numpy as np
import pytest

from dpviz import cli
from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream import strategy as strategies
from dpviz.stream.fenwick import MAX_COUNT, MAX_STEPS, MAX_TOTAL, check_horizon, check_steps, strategy_nnz
from dpviz.stream.io import MAX_BYTES, read_stream_csv
from dpviz.stream.mechanism import make_mechanism, simulated_release
from dpviz.stream.release import release

BOM = b"\xef\xbb\xbf"
TOTAL_OVER = b"count\n" + b"900000000000\n" * 10_010  # each count allowed, the running total passes 2^53
MILLION_COLUMNS = (",".join(f"c{i}" for i in range(1_000_000)).encode()[:6_900_000] + b"\n"
                   + b",".join([b"1"] * 1_000_000) + b"\n")  # issue 17: 77 s, 4.4 GB and a 10.9 MB error line
WIDE_HEADER = ",".join(["count", *(f"extra_column_{i}" for i in range(500))]).encode()

# (id, file bytes or None for no file, argv after the input (INPUT / OUT substituted), words the line must hold)
CASES = [
    ("ragged-first-row", b"count\n1,2\n3,4\n", ["simulate"], ["line 2", "2 fields", "header has 1"]),
    ("ragged-later-row", b"date,count\n2024-01-01,1\n2024-01-02,2,9\n", ["release"], ["line 3", "3 fields"]),
    ("count-1e308", b"count\n1e308\n1e308\n", ["simulate"], ["line 2", "MAX_COUNT", "1e+308"]),
    ("count-1e308-release", b"count\n1e308\n1e308\n", ["release"], ["line 2", "MAX_COUNT"]),
    ("count-above-bound", b"count\n1\n1000000000001\n", ["release"], ["line 3", "1,000,000,000,000"]),
    ("running-total-above-2^53", TOTAL_OVER, ["release"], ["line 10009", "MAX_TOTAL", "2^53"]),
    ("two-boms-only", BOM + BOM, ["simulate"], ["empty"]),
    ("boms-and-header-only", BOM + BOM + b"count\n", ["simulate"], ["no data rows"]),
    ("nul-in-value", b"count\n1\x00\n2\n", ["simulate"], ["line 2", "NUL"]),
    ("nul-in-header", b"count\x00\n1\n", ["release"], ["line 1", "NUL"]),
    ("utf-16", "count\n1\n2\n".encode("utf-16"), ["simulate"], ["UTF-16"]),
    ("empty-file", b"", ["simulate"], ["empty"]),
    ("blank-header", b",\n1,2\n", ["simulate"], ["header", "empty"]),
    ("header-only", b"count\n", ["release"], ["no data rows"]),
    ("not-a-number", b"count\n1\nlots\n", ["simulate"], ["line 3", "'lots'"]),
    ("nan", b"count\nnan\n", ["simulate"], ["line 2", "finite"]),
    ("inf", b"count\n1\ninf\n", ["release"], ["line 3", "finite"]),
    ("negative", b"count\n1\n-3\n", ["simulate"], ["line 3", "negative"]),
    ("empty-count", b"date,count\n2024-01-01,\n", ["simulate"], ["line 2", "empty"]),
    ("blank-lines-keep-line-numbers", b"count\n1\n\n\nx\n", ["simulate"], ["row 2 (line 5)"]),
    ("bad-date", b"date,count\nsoon,1\n", ["simulate"], ["line 2", "'soon'", "date"]),
    ("relative-date", b"date,count\n2024-01-01,1\nnow,1\n", ["simulate"], ["line 3", "'now'"]),
    ("mixed-time-zones", b"date,count\n2024-01-01T00:00+01:00,1\n2024-01-02,1\n", ["release"],
     ["line 3", "time zone"]),
    ("non-integer-release", b"count\n1\n2\n2.5\n", ["release"], ["step 3", "not an integer"]),
    ("duplicate-count-column", b"count,count\n1,2\n", ["simulate"], ["'count' appears 2 times"]),
    ("ambiguous-columns", b"a,b\n1,2\n", ["simulate"], ["cannot tell"]),
    ("count-column-nosuch", b"count\n1\n", ["simulate", "--count-column", "nosuch"], ["'nosuch' not found"]),
    ("time-column-nosuch", b"count\n1\n", ["release", "--time-column", "when"], ["'when' not found"]),
    ("count-is-time-column", b"date,count\n2024-01-01,1\n", ["simulate", "--count-column", "date", "--time-column",
                                                             "date"], ["both"]),
    ("rows-above-cap", b"count\n" + b"1\n" * 11, ["simulate", "--max-steps", "10"], ["too long", "--max-steps"]),
    ("bytes-above-cap", b"count\n" + b"1\n" * 11, ["release", "--max-bytes", "10"], ["bytes", "--max-bytes"]),
    ("horizon-shorter-than-file", b"count\n1\n2\n3\n", ["simulate", "--horizon", "2"], ["shorter"]),
    ("horizon-zero", b"count\n1\n", ["simulate", "--horizon", "0"], ["positive integer"]),
    ("horizon-above-cap", b"count\n1\n", ["release", "--horizon", "100000000000"], ["above the cap", "--max-steps",
                                                                                    "TiB"]),
    ("max-steps-zero", b"count\n1\n", ["simulate", "--max-steps", "0"], ["--max-steps", "positive integer"]),
    ("missing-input", None, ["simulate"], ["does not exist"]),
    ("input-is-a-folder", "folder", ["release"], ["folder"]),
    ("release-output-folder-missing", b"count\n1\n", ["release", "--output", "/nonexistent/dir/o.csv"],
     ["does not exist"]),
    ("release-with-seed", b"count\n1\n", ["release", "--seed", "3"], ["--seed", "simulate"]),
    ("sqrt-release-laplace", b"count\n1\n", ["release", "--mechanism", "sqrt"], ["discrete Gaussian", "Laplace"]),
    ("sqrt-laplace", b"count\n1\n", ["simulate", "--mechanism", "sqrt,naive", "--noise", "laplace"], ["Gaussian"]),
    ("unknown-mechanism", b"count\n1\n", ["simulate", "--mechanism", "naive,magic"], ["magic"]),
    ("epsilon-nan", b"count\n1\n", ["simulate", "--epsilon", "nan"], ["epsilon"]),
    ("epsilon-negative", b"count\n1\n", ["release", "--epsilon", "-1"], ["epsilon"]),
    ("sample-count-column-nosuch", "sample:flights", ["simulate", "--count-column", "nosuch"],
     ["--count-column 'nosuch'", "date, count"]),
    ("sample-time-column-nosuch", "sample:bike", ["release", "--time-column", "when"], ["--time-column 'when'"]),
    ("sample-above-max-steps", "sample:bike", ["simulate", "--max-steps", "100"], ["17,544", "--max-steps"]),
    # issue 17, item 6: lines above the cap are refused while reading; messages stay short
    ("million-column-header", MILLION_COLUMNS, ["release"], ["line 1 is longer than 65,536 bytes", "MAX_LINE_BYTES",
                                                             "--max-line-bytes"]),
    ("long-data-line", b"count\n1\n" + b"9" * 70_000 + b"\n2\n", ["simulate"], ["line 3 is longer than 65,536"]),
    ("long-last-line-unterminated", b"count\n1\n" + b"9" * 70_000, ["release"], ["line 3 is longer"]),
    ("long-line-across-chunks", b"count\n" + b"1234567\n" * 524_000 + b"7" * 70_000 + b"\n", ["release"],
     ["line 524,002 is longer"]),  # the line starts 2,298 bytes before the end of the first 4 MiB chunk
    ("long-line-cr-ends", b"count\r1\r" + b"9" * 70_000 + b"\r", ["simulate"], ["line 3 is longer"]),
    ("line-cap-flag", b"count\n1\n123456\n", ["release", "--max-line-bytes", "5"], ["line 3 is longer than 5 bytes"]),
    ("max-line-bytes-zero", b"count\n1\n", ["release", "--max-line-bytes", "0"], ["--max-line-bytes",
                                                                                  "positive integer"]),
    ("ragged-row-quoted", b'count,note\n1,"a,b"\n2,"c",x\n', ["release"], ["line 3 has 3 fields", "header has 2"]),
    ("ragged-row-wide", WIDE_HEADER + b"\n" + b"1" + b",x" * 500 + b"\n2" + b",x" * 501 + b"\n", ["release"],
     ["line 3 has 502 fields but the header has 501"]),
    ("long-value-cut", b"count\n1\n" + b"x" * 60_000 + b"\n", ["simulate"], ["row 2 (line 3)", "60,000 characters"]),
    ("long-header-names-cut", WIDE_HEADER + b"\n1" + b",x" * 500 + b"\n", ["simulate", "--count-column", "nosuch"],
     ["'nosuch' not found", "(501 columns)"]),
]
VIEWS = [
    ("weights-horizon-1e11", ["weights", "--horizon", "100000000000"], ["above the cap", "--max-steps", "TiB"]),
    ("weights-beyond-memory", ["weights", "--horizon", "100000000000", "--max-steps", "100000000000"],
     ["more than this machine has", "TiB"]),
    ("weights-horizon-zero", ["weights", "--horizon", "0"], ["positive integer"]),
    ("weights-horizon-negative", ["weights", "--horizon", "-1"], ["positive integer"]),
    ("matrix-horizon-1e8", ["matrix", "--horizon", "100000000"], ["above the cap", "GiB"]),
    ("matrix-horizon-zero", ["matrix", "--horizon", "0"], ["positive integer"]),
    ("variance-horizon-1e11", ["variance", "--horizon", "100000000000", "--mechanism", "naive", "--epsilon", "1"],
     ["above the cap"]),
    ("variance-output-folder-missing", ["variance", "--horizon", "5", "--mechanism", "naive", "--epsilon", "1",
                                        "--output", "/nonexistent/dir/v.csv"], ["does not exist"]),
    ("variance-no-budget", ["variance", "--horizon", "5", "--mechanism", "naive"], ["--epsilon"]),
    ("weights-horizon-text", ["weights", "--horizon", "many"], ["--horizon"]),  # argparse: exit 2, one line
]


def _main(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    return code, capsys.readouterr()


def _argv(tmp_path, raw, rest):
    verb, *flags = rest
    if raw is None:
        src = str(tmp_path / "missing.csv")
    elif raw == "folder":
        (tmp_path / "folder").mkdir()
        src = str(tmp_path / "folder")
    elif isinstance(raw, str):
        src = raw
    else:
        src = str(tmp_path / "in.csv")
        (tmp_path / "in.csv").write_bytes(raw)
    out = str(tmp_path / "out.csv")
    argv = ["stream", verb, src]
    if "--mechanism" not in flags:
        argv += ["--mechanism", "fenwick-fda"]
    if "--epsilon" not in flags and "--noise" not in flags:
        argv += ["--epsilon", "1"]
    if "--noise" in flags:
        argv += ["--epsilon", "1"]
    if verb == "simulate":
        argv += ["--seed", "1"]
    if "--output" not in flags:
        argv += ["--output", out]
    return argv + flags


@pytest.mark.parametrize(("raw", "rest", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_input_case_exits_2_with_one_line_and_no_output(tmp_path, capsys, raw, rest, words):
    before = set(os.listdir(tmp_path))
    argv = _argv(tmp_path, raw, rest)
    inputs = set(os.listdir(tmp_path))
    code, captured = _main(argv, capsys)
    assert code == 2, captured
    assert captured.err.count("\n") == 1 and captured.err.startswith("dpviz: error: "), captured.err
    assert len(captured.err) < 600, len(captured.err)  # a sane length, whatever the file holds
    assert "Traceback" not in captured.err and captured.out == ""
    for word in words:
        assert word in captured.err, (word, captured.err)
    assert set(os.listdir(tmp_path)) == inputs | before  # no output, no .meta.json, no temporary file


@pytest.mark.parametrize(("argv", "words"), [c[1:] for c in VIEWS], ids=[c[0] for c in VIEWS])
def test_structure_view_case_exits_2_with_one_line(tmp_path, capsys, argv, words):
    code, captured = _main(["stream", *argv], capsys)
    assert code == 2 and captured.err.count("\n") == 1 and captured.out == "", captured
    for word in words:
        assert word in captured.err, (word, captured.err)
    assert os.listdir(tmp_path) == []


def test_the_caps_are_stated_in_help(capsys):
    for verb in ("simulate", "release", "weights", "matrix", "variance"):
        with pytest.raises(SystemExit):
            cli.main(["stream", verb, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "--max-steps" in text and f"{MAX_STEPS:,}" in text, verb
        if verb in ("simulate", "release"):
            assert "--max-bytes" in text and f"{MAX_BYTES:,}" in text and f"{MAX_COUNT:,}" in text, verb


# ---- caps before the work --------------------------------------------------------------------------------
def test_a_file_above_the_byte_cap_is_refused_from_its_size_without_reading(tmp_path, monkeypatch):
    big = tmp_path / "junk.csv"
    with big.open("wb") as fh:  # a sparse 200 MB file: costs no disk and would be slow to read
        fh.truncate(200_000_000)
    opened = []
    monkeypatch.setattr(type(big), "open", lambda self, *a, **k: opened.append(self))
    with pytest.raises(InputError, match=r"200,000,000 bytes.*cap is 100,000,000 bytes.*--max-bytes"):
        read_stream_csv(big)
    assert opened == []


def test_rows_are_counted_while_reading_before_parsing():
    reads = []

    class Endless(io.RawIOBase):
        """An endless stream of rows: only a reader that stops early returns."""

        def read(self, n=-1):
            reads.append(n)
            return b"count\n" if len(reads) == 1 else b"1\n" * (n // 2)

    with pytest.raises(InputError, match=r"more than 1,000 rows is too long.*--max-steps"):
        read_stream_csv(Endless(), max_steps=1_000)
    assert len(reads) <= 3
    with pytest.raises(InputError, match=r"more than 1,000 bytes.*--max-bytes"):
        read_stream_csv(Endless(), max_bytes=1_000)


def test_blank_lines_do_not_count_against_the_row_cap_and_boms_are_dropped():
    raw = BOM + BOM + b"count\n" + b"1\n\n" * 10 + b"\r\n"
    d = read_stream_csv(raw, max_steps=10)
    assert len(d) == 10 and d.count_column == "count"
    assert read_stream_csv(b"count\r1\r2\r").counts.tolist() == [1, 2]  # old Mac line ends


def test_one_time_zone_is_read_as_wall_clock_datetime64():
    d = read_stream_csv(b"date,count\n2024-01-01T23:00+01:00,1\n2024-01-02T23:00+01:00,2\n")
    assert d.timestamps.dtype.kind == "M" and str(d.timestamps[0]).startswith("2024-01-01T23:00")


def test_fewer_fields_than_the_header_are_empty_fields():
    with pytest.raises(InputError, match=r"row 1 \(line 2\), column 'count': is empty"):
        read_stream_csv(b"date,count\n2024-01-01\n")
    d = read_stream_csv(b"date,count,note\n2024-01-01,3\n2024-01-02,4,x\n")
    assert d.counts.tolist() == [3, 4] and d.time_column == "date"


def test_bounds_are_exact_at_the_edges():
    assert read_stream_csv(b"count\n%d\n" % MAX_COUNT).counts[0] == MAX_COUNT
    with pytest.raises(InputError, match="MAX_COUNT"):
        read_stream_csv(b"count\n%d\n" % (MAX_COUNT + 1))
    with pytest.raises(InputError, match="MAX_COUNT"):
        read_stream_csv(b"count\n99999999999999999999999999\n")
    n = MAX_TOTAL // MAX_COUNT  # 9,007 full steps, then the remainder: exactly MAX_TOTAL is accepted
    rest = MAX_TOTAL - n * MAX_COUNT
    full = b"count\n" + b"%d\n" % MAX_COUNT * n
    assert read_stream_csv(full + b"%d\n" % rest).counts.sum() == MAX_TOTAL
    with pytest.raises(InputError, match=rf"row {n + 1} \(line {n + 2}\).*MAX_TOTAL"):
        read_stream_csv(full + b"%d\n" % (rest + 1))


def test_library_paths_refuse_what_would_overflow():
    """The Python API (not only the CSV loader): 1e308 twice would make the running total inf."""
    noise = Noise.laplace(1.0)
    with pytest.raises(InputError, match=r"step 1: the count 1e\+308.*MAX_COUNT"):
        make_mechanism("naive", 2, noise).simulate(np.array([1e308, 1e308]), np.random.default_rng(0))
    with pytest.raises(InputError, match=r"step 2: .*MAX_COUNT"):
        release(np.array([1, 2**62], dtype=np.int64), Noise.laplace(1.0, discrete=True), mechanism="fenwick")
    step = MAX_TOTAL // (4 * 10**11) + 1  # an int64 stream of 4·10^11 per step passes 2^53 - 1 there
    with pytest.raises(InputError, match=rf"step {step}: the running total.*MAX_TOTAL"):
        release(np.full(30_000, 4 * 10**11), Noise.laplace(1.0, discrete=True), mechanism="naive")
    with pytest.raises(InputError, match="MAX_COUNT"):
        simulated_release(make_mechanism("naive", 3, noise), np.array([1.0, -2e12, 3.0]), np.zeros(3))
    streamer = make_mechanism("fenwick-fda", 4, noise).streamer(np.random.default_rng(0))
    streamer.step(3)
    for bad in (1e308, float("nan"), "x", None):
        with pytest.raises(InputError, match="step 2"):
            streamer.step(bad)
    assert streamer.step(2)[0] == pytest.approx(5.0, abs=100)  # the refused steps left no trace


def test_horizon_checks_estimate_memory_before_allocating():
    with pytest.raises(InputError, match=r"N = 100,000,000,000 steps would need about .* TiB.*more than this machine"):
        check_horizon(10**11)
    with pytest.raises(InputError, match=r"--horizon 2,000,000 is above the cap of 1,048,576 steps \(it would need "
                                         r"about 976.6 MiB of memory, estimate\); raise the cap with --max-steps N"):
        check_steps(2_000_000)
    assert check_steps(2_000_000, 2_000_000) == 2_000_000
    for n in (1, 2, 3, 12, 1000, 2**20 + 7):
        assert strategy_nnz(n) == int(sum(k & -k for k in range(1, n + 1)))
    with pytest.raises(InputError, match="horizon"):
        strategies.strategy("fenwick-fda", 10**11)  # the library itself never reaches a MemoryError


# ---- streaming = batch, and the variances are cached -------------------------------------------------------
@pytest.mark.parametrize(("name", "noise"), [("fenwick-fda", Noise.laplace(0.7)), ("fenwick-fda", Noise.gaussian(0.3)),
                                             ("honaker", Noise.laplace(1.0)), ("binary", Noise.laplace(1.0))])
def test_streaming_step_equals_the_batch_across_noise_blocks(name, noise):
    """N = 5000 > the streamer's 4096-variate noise block (and not a power of two)."""
    n = 5000
    mech = make_mechanism(name, n, noise)
    a = np.random.default_rng(4).poisson(30, n).astype(float)
    batch = mech.simulate(a, np.random.default_rng(11))
    streamer = mech.streamer(np.random.default_rng(11))
    out = np.array([streamer.step(x) for x in a])
    np.testing.assert_allclose(out[:, 0], batch.prefix_sums, rtol=0, atol=1e-9 * np.abs(batch.prefix_sums).max())
    np.testing.assert_array_equal(out[:, 1], batch.variance)
    with pytest.raises(InputError, match="exhausted"):
        streamer.step(1.0)


def test_per_step_variances_are_computed_once_per_mechanism_n_and_noise(monkeypatch):
    calls = []
    original = strategies.StreamStrategy._step_variance
    monkeypatch.setattr(strategies.StreamStrategy, "_step_variance",
                        lambda self, noise: calls.append((self.name, noise)) or original(self, noise))
    strategies._step_variance.cache_clear()
    counts = np.random.default_rng(0).poisson(5, 777)
    noise = Noise.laplace(0.9, discrete=True)
    first = release(counts, noise, mechanism="fenwick-fda")
    for _ in range(3):  # more releases, the same noise: no recomputation
        again = release(counts, noise, mechanism="fenwick-fda")
    assert calls == [("fenwick-fda", noise)]
    assert again.estimate.variance is first.estimate.variance
    sim = Noise.laplace(0.9)
    mech = make_mechanism("fenwick-fda", 777, sim)
    for seed in range(3):  # redraws
        mech.simulate(counts, np.random.default_rng(seed))
    assert calls == [("fenwick-fda", noise), ("fenwick-fda", sim)]
    assert mech.per_step_variance() is make_mechanism("fenwick-fda", 777, Noise.laplace(0.9)).per_step_variance()


# ---- issue 17, item 6: bounded reading, FIFOs ----------------------------------------------------------------
def test_a_million_column_file_is_refused_fast_in_bounded_memory():
    """The file of the issue (6.9 MB, 1M columns: 77 s and 4.4 GB before) is refused from its first chunk."""
    import time
    import tracemalloc

    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(InputError, match="line 1 is longer than 65,536 bytes") as exc:
        read_stream_csv(MILLION_COLUMNS)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 2 and peak < 64 * 2**20, (seconds, peak)  # about one 4 MiB chunk, not 4.4 GB
    assert len(str(exc.value)) < 400


def test_a_wide_file_under_the_line_cap_reads_only_the_columns_it_uses():
    """5,000 columns, 1,000 rows: linear (the other columns are counted, never turned into values)."""
    import time

    raw = ("date," + ",".join(f"c{i}" for i in range(4_998)) + ",count\n").encode() + b"".join(
        b"2024-01-%02d," % (1 + r % 28) + b"x," * 4_998 + b"%d\n" % r for r in range(1_000))
    t0 = time.perf_counter()
    d = read_stream_csv(raw)
    assert time.perf_counter() - t0 < 10
    assert d.counts.tolist() == list(range(1_000)) and d.time_column == "date"


def test_quoted_fields_with_commas_are_one_field():
    d = read_stream_csv(b'count,note\n1,"a,b"\n2, "c,d"\n')
    assert d.counts.tolist() == [1, 2]


def test_the_line_cap_is_exact():
    assert read_stream_csv(b"count\n" + b"1" * 10 + b"\n", max_line_bytes=10).counts[0] == 1_111_111_111
    with pytest.raises(InputError, match="line 2 is longer than 10 bytes"):
        read_stream_csv(b"count\n" + b"1" * 11 + b"\n", max_line_bytes=10)
    with pytest.raises(InputError, match="max_line_bytes: expected a positive integer"):
        read_stream_csv(b"count\n1\n", max_line_bytes=0)


@pytest.mark.parametrize("verb", ["release", "simulate"])
def test_a_fifo_input_is_refused_at_once(tmp_path, verb):
    """A named pipe nobody writes to: refused before it is opened (a real process with a timeout, so that a
    regression fails instead of hanging the suite); the library refuses it too."""
    import subprocess
    import sys
    import time

    fifo = tmp_path / "in.csv"
    os.mkfifo(fifo)
    out = tmp_path / "o.csv"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dpviz", "stream", verb, str(fifo), "--mechanism", "fenwick-fda",
                           "--epsilon", "1", "--output", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "FIFO" in proc.stderr, proc.stderr
    assert time.perf_counter() - t0 < 30 and not out.exists()
    with pytest.raises(InputError, match="FIFO"):
        read_stream_csv(fifo)
