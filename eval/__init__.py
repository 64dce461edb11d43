"""Benchmarks against real data and against the baselines users would pick instead."""
