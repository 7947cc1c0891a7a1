"""Driving tests: the pytest plugin's fixtures, scenario files and their tests, and the fuzzer."""
