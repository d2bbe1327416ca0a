"""The order of a measurement's runs (measure.plan_jobs): repetitions interleaved so that drift
hits every variant alike; under relink, a seed of its own for every repetition of a seeded layout."""

from __future__ import annotations

from layoutbench import measure


def test_plan_jobs_interleaves_repetitions_so_that_drift_hits_every_variant_alike():
    specs = [("default", 0), ("random", 1), ("random", 2)]
    jobs = measure.plan_jobs(specs, 2, "rerun")
    assert [(j.layout, j.seed, j.rep) for j in jobs] == [
        ("default", 0, 0), ("random", 1, 0), ("random", 2, 0),
        ("default", 0, 1), ("random", 1, 1), ("random", 2, 1)]
    assert measure.plan_jobs(specs, 2, "reboot") == jobs


def test_plan_jobs_relink_gives_every_repetition_of_a_seeded_layout_a_seed_of_its_own():
    jobs = measure.plan_jobs([("sorted", 0), ("random", 1), ("random", 2), ("padded", 5)], 3, "relink")
    got = [(j.layout, j.seed, j.rep) for j in jobs]
    assert got == [("sorted", 0, 0), ("sorted", 0, 1), ("sorted", 0, 2),
                   ("random", 1, 0), ("random", 2, 0), ("random", 3, 0),   # seeds follow on from the spec's
                   ("random", 4, 0), ("random", 5, 0), ("random", 6, 0),
                   ("padded", 5, 0), ("padded", 6, 0), ("padded", 7, 0)]
    assert len({(j.layout, j.seed) for j in jobs if j.layout == "random"}) == 6
