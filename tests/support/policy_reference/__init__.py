"""The policies' previous implementations, kept verbatim as references.

The tests check that the indexed, incremental rounds take exactly the decisions these
took on random states; benchmarks/policy_rounds.py times them as the peer of the same run.
"""
