"""Wordcount map throughput (MB/s on one core) vs a plain single-process Python count.

Both read the same generated text file: ours is one map task (tokenize,
combine, partition into 4 reducers, write its block) with an ideal budget;
the peer reads the file and counts with ``re.findall`` and ``collections.Counter``
(the documented tokenizer, written the obvious way).

    python benchmarks/workload_wordcount.py [--size-mb 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from testbed.scenario.schema import WordcountJob
from testbed.workloads import wordcount
from testbed.workloads.local import LocalJob
from testbed.workloads.profile import UNLIMITED

MB = 2**20


def plain_count(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            counts.update(re.findall(r"[^\W_]+", line.lower()))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-wc-") as tmp:
        text = Path(tmp) / "text.txt"
        generated = WordcountJob(workload="wordcount", size_mb=args.size_mb, maps=1)
        with open(text, "wb") as out:
            for chunk in wordcount.source_chunks(wordcount.sources_of(generated, 1)[0]):
                out.write(chunk)
        size = text.stat().st_size
        job = WordcountJob(workload="wordcount", input=str(text), maps=1, reduces=4)
        local = LocalJob(wordcount.plan(job, 1), Path(tmp) / "job")
        ours = min(local.run_task(0, 0, UNLIMITED, attempt=r).seconds for r in range(args.repeat))
        peer = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            plain_count(text)
            peer.append(time.perf_counter() - started)
        print(f"{size / MB:.0f} MB of text")
        print(
            f"ours (map task): {size / MB / ours:.1f} MB/s   "
            f"plain Python count: {size / MB / min(peer):.1f} MB/s   ratio {min(peer) / ours:.2f}x"
        )


if __name__ == "__main__":
    main()
