"""Musketeer's top-shopper workflow (Gog 2017, §4.3.1, Listing 4.1): an online shop's purchase
log, filtered by country, summed per user, the users above a threshold. The log is generated
here (seeded, pipe-delimited like TPC-H's tables), since the dissertation's is not published:
``python -m testbed.workflows.shop --purchases N --out DIR`` writes ``DIR/shop_logs.tbl``."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from testbed.workflows.sql import Table
from testbed.workflows.types import Column, parse_type

COUNTRIES = ("USA", "UK", "France", "Germany", "Japan")
SCHEMA = (
    Column("purchase_id", parse_type("int")),
    Column("user_id", parse_type("int")),
    Column("amount", parse_type("decimal(10,2)")),
    Column("country", parse_type("string")),
)
PURCHASES_PER_USER = 40
"""With amounts uniform in 0.01..600.00, a user's total is about 12,000: half the users pass
the threshold, so the answer is neither empty nor everyone."""


def generate(purchases: int, directory: Path, seed: int = 1) -> Path:
    """``shop_logs.tbl`` of ``purchases`` rows (kept when already there); a user lives in one
    country (user_id modulo the countries), as a shop's customer would."""
    path = directory / "shop_logs.tbl"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    users = max(1, purchases // PURCHASES_PER_USER)
    partial = path.with_suffix(".tbl.inprogress")
    with open(partial, "w", encoding="utf-8") as out:
        for purchase in range(1, purchases + 1):
            user = rng.randrange(1, users + 1)
            cents = rng.randrange(1, 60001)
            country = COUNTRIES[user % len(COUNTRIES)]
            out.write(f"{purchase}|{user}|{cents // 100}.{cents % 100:02d}|{country}|\n")
    partial.rename(path)
    return path


def tables(path: Path, splits: int | None = None) -> dict[str, Table]:
    return {"shop_logs": Table(str(path), "tbl", SCHEMA, splits)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="generate top-shopper's purchase log")
    parser.add_argument("--purchases", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("scenarios/workflows/data"))
    args = parser.parse_args(argv)
    print(generate(args.purchases, args.out, args.seed))


if __name__ == "__main__":
    main()
