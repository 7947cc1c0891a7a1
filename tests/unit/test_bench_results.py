"""`make bench`'s results: kept as they are printed, written as JSON and a chart, rendered into the docs page."""

import json

from cdc_sandbox.bench import page
from cdc_sandbox.bench.results import Results, publish, write

MACHINE = {"cores": 2, "python": "3.11.9", "commit": "abc1234", "loop_seconds": 0.138}


def _results() -> Results:
    said = []
    results = Results(said.append)
    results.add("Stack", "up.seconds", "down, then up to ready", 41.26, "s", "up took 41.3 s")
    results.add("Idle stack", "rss.kafka", "kafka resident, idle", 512.4, "MiB")
    results.add("The job", "job.latency.p50", "job: source commit -> Hudi commit, p50", 1.734, "s")
    results.say("a line with no figure")
    results.said = said
    return results


def test_a_figure_is_kept_and_its_sentence_printed():
    results = _results()
    assert results.said == ["up took 41.3 s", "a line with no figure"]
    assert [(f.key, f.value, f.unit) for f in results.figures] == [
        ("up.seconds", 41.26, "s"), ("rss.kafka", 512.4, "MiB"), ("job.latency.p50", 1.734, "s")]


def test_the_results_are_written_as_json_and_a_chart_of_each_unit(tmp_path):
    data, chart = write(_results().as_json(MACHINE), tmp_path / "bench")
    written = json.loads(data.read_text())
    assert written["machine"] == MACHINE and len(written["figures"]) == 3
    svg = chart.read_text()
    assert svg.startswith("<?xml") and "seconds" in svg and "MiB resident" in svg
    again = write(written, tmp_path / "again")[1].read_text()
    assert again == svg, "the same results draw the same chart, so a committed chart changes only with its figures"


def test_the_page_shows_every_figure_by_section_with_the_machine_it_ran_on(tmp_path):
    results = _results().as_json(MACHINE)
    text = page.render(results, "benchmarks.svg")
    assert text.startswith("# Benchmarks\n") and page.GENERATED in text
    assert "commit `abc1234`" in text and "0.138 s" in text and "![" in text and "(benchmarks.svg)" in text
    for heading, row in [("## Stack", "| down, then up to ready | 41.26 s |"),
                         ("## Idle stack", "| kafka resident, idle | 512 MiB |"),
                         ("## The job", "| job: source commit -> Hudi commit, p50 | 1.73 s |")]:
        assert heading in text and row in text


def test_publishing_copies_the_results_beside_the_page_and_renders_it_from_them(tmp_path):
    data, chart = write(_results().as_json(MACHINE), tmp_path / "bench")
    docs_page = tmp_path / "docs" / "benchmarks.md"
    docs_page.parent.mkdir()
    publish(data, chart, docs_page)
    kept = json.loads(docs_page.with_suffix(".json").read_text())
    assert docs_page.read_text() == page.render(kept, "benchmarks.svg")
    assert docs_page.with_suffix(".svg").read_text() == chart.read_text()


def test_a_run_without_figures_says_how_to_get_some():
    text = page.render(Results().as_json(MACHINE), "benchmarks.svg")
    assert "run `make bench`" in text
