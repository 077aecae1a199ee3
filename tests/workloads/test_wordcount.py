from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.scenario.schema import WordcountJob
from testbed.workloads import wordcount
from testbed.workloads.check import check_output

SEED = 5
TRICKY = [
    "Hello, World! hello_world HELLO-world",
    "Straße STRASSE straße; Ünïcödé ÜNÏCÖDÉ",
    "ΟΔΟΣ ΟΔΟΣ'Α σοφός. ΣΟΦΟΣ",  # noqa: RUF001 - the capital sigma is lowered by context
    "数据 数据，数据。abc—def 12٣4 x²y",  # noqa: RUF001
    "İstanbul ǅemal ﬁne",
]


def exact(text: bytes) -> Counter[str]:
    """The documented rule, written independently: lowercase, then runs of [^\\W_]."""
    return Counter(re.findall(r"[^\W_]+", text.decode("utf-8", errors="replace").lower()))


def fast(text: bytes) -> Counter[str]:
    counts: Counter[str] = Counter()
    for word, count in wordcount.count_words(text):
        counts[word] += count
    return counts


@pytest.mark.parametrize("text", TRICKY)
def test_fast_tokenizer_equals_the_documented_rule(text):
    data = text.encode()
    assert fast(data) == exact(data)


def test_invalid_utf8_is_replaced_and_separates_words():
    data = b"ab\xffcd ab\xe2\x82 \xce\xa3x caf\xc3\xa9"
    assert fast(data) == exact(data) == Counter({"ab": 2, "cd": 1, "σx": 1, "café": 1})  # noqa: RUF001


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60) | st.text(max_size=40).map(str.encode))
def test_fast_tokenizer_on_arbitrary_input(data):
    assert fast(data) == exact(data)


def test_slices_cut_at_word_boundaries():
    text = b"alpha beta\ngamma " * 50 + b"x" * 300
    pieces = list(wordcount.slices(text, 37))
    assert b"".join(pieces) == text
    assert all(p.endswith((b" ", b"\n")) for p in pieces[:-1])


@pytest.mark.parametrize("fraction", [1.0, 0.1])
def test_generated_wordcount_equals_reference(run_at, fraction):
    job = WordcountJob(workload="wordcount", size_mb=1.5, maps=2, reduces=3, vocabulary=20_000)
    local = run_at(job, SEED, fraction)
    texts = [b"".join(wordcount.source_chunks(s)) for s in wordcount.sources_of(job, SEED)]
    assert wordcount.read_output(local.outputs) == exact(b"\n".join(texts))
    for stage in (0, 1):
        spilled = local.total("spill_bytes", stage)
        assert (spilled > 0) if fraction < 1 else (spilled == 0)
    assert check_output(job, SEED, local.outputs) == []


@pytest.mark.parametrize("fraction", [1.0, 0.1])
def test_file_input_equals_reference(run_at, tmp_path, fraction):
    lines = [f"{TRICKY[i % len(TRICKY)]} w{i % 997} W{i % 991}_z{i}\n" for i in range(8_000)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("".join(lines[:5000]))
    (tmp_path / "in" / "b.txt").write_text("".join(lines[5000:]) + "no final newline")
    job = WordcountJob(workload="wordcount", input=str(tmp_path / "in"), maps=5, reduces=2)
    local = run_at(job, SEED, fraction)
    expected = exact("".join(lines).encode() + b"no final newline")
    assert wordcount.read_output(local.outputs) == expected
    assert (local.total("spill_bytes") > 0) == (fraction < 1)


def test_check_output_catches_a_wrong_count(run_at):
    job = WordcountJob(workload="wordcount", size_mb=0.3, maps=1, reduces=2, vocabulary=500)
    local = run_at(job, SEED, 1.0)
    part = sorted(local.outputs.glob("part-*"))[0]
    lines = part.read_text(encoding="utf-8").splitlines()
    word, _, count = lines[0].rpartition("\t")
    lines[0] = f"{word}\t{int(count) + 1}"
    part.write_text("\n".join(lines) + "\n", encoding="utf-8")
    problems = check_output(job, SEED, local.outputs)
    assert len(problems) == 1 and "1 words have wrong counts" in problems[0]


def test_the_generated_vocabulary_is_packed_distinct_and_seeded():
    """Generating input stays within a small task's budget: a few bytes per word, where a
    list of Python strings costs about 60."""
    vocab = wordcount.vocabulary(200_000, 1)
    packed = len(vocab.blob) + vocab.offsets.nbytes + vocab.by_rank.nbytes
    assert packed < 200_000 * 30
    words = vocab.words(vocab.by_rank.argsort()[:1000])  # the first 1,000 words, by index
    assert [w.decode() for w in words] == [wordcount.spell(i) for i in range(1000)]
    assert len(set(vocab.words(vocab.by_rank))) == 200_000
    assert not (wordcount.vocabulary(1000, 2).by_rank == wordcount.vocabulary(1000, 3).by_rank).all()
