"""The HTML evaluation report: each section on hand-made predictions with known answers, the page's
numbers against the Python metrics, the hierarchy, and the page in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from crossner_hf.evaluation.hierarchy import COARSE_TYPES, NO_ENTITY, coarse_type, entity_confusion, to_coarse_tags
from crossner_hf.data.labels import ALL_TYPES
from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.evaluation.report import analysis, build_report

# Five sentences whose every number is worked out by hand in the comments of the tests.
TOKENS = [["Ann", "Lee", "met", "Bob", "in", "Paris"], ["The", "Green", "Party", "won"], ["Rome", "is", "old"],
          ["I", "like", "jazz"], ["Kim", "sang"]]
GOLD = [["B-politician", "I-politician", "O", "B-person", "O", "B-location"],
        ["O", "B-politicalparty", "I-politicalparty", "O"], ["B-location", "O", "O"], ["O", "O", "O"],
        ["B-person", "O"]]
PRED = [["B-person", "I-person", "O", "B-person", "O", "B-location"],   # politician -> person (wrong type)
        ["O", "O", "B-politicalparty", "O"],                               # boundary too short
        ["O", "O", "O"],                                                   # Rome missed
        ["O", "O", "B-misc"],                                              # jazz spurious
        ["B-person", "O"]]                                                 # right


def _testid(html: str, testid: str) -> str:
    m = re.search(rf'data-testid="{re.escape(testid)}"[^>]*>([^<]*)<', html)
    assert m, testid
    return m.group(1).strip()


def test_coarse_map_covers_real_types_and_the_issue_examples():
    assert set(COARSE_TYPES) <= set(ALL_TYPES)
    for fine in ("politician", "scientist", "writer", "musicalartist", "researcher"):
        assert coarse_type(fine) == "person"
    for fine in ("politicalparty", "band", "university"):
        assert coarse_type(fine) == "organisation"
    assert coarse_type("country") == "location" and coarse_type("album") == "album"
    assert to_coarse_tags(["B-band", "I-band", "O"]) == ["B-organisation", "I-organisation", "O"]


def test_entity_confusion_by_hand():
    c = entity_confusion(GOLD, PRED)
    assert c.counts[("politician", "person")] == 1                 # exact span, wrong type
    assert c.counts[("person", "person")] == 2                     # Bob, Kim
    assert c.counts[("politicalparty", "politicalparty")] == 1     # a boundary error of one type
    assert c.counts[("location", "location")] == 1 and c.counts[("location", NO_ENTITY)] == 1
    assert c.counts[(NO_ENTITY, "misc")] == 1
    kinds = sorted(i.kind for i in c.items)
    assert kinds == ["correct"] * 3 + ["missed", "spurious", "wrong-boundary", "wrong-type"]
    assert c.near_miss_share() == 1.0  # the one type error (politician -> person) stays in "person"
    assert c.row_percentages()[("location", NO_ENTITY)] == 50.0
    assert "type errors inside one coarse branch: 100.00% of 1" in c.format()


def test_scores_intervals_and_buckets_by_hand():
    # gold 6 entities, predicted 6, exact matches 3 (Bob, Paris, Kim): P = R = F1 = 0.5
    s = analysis.scores_with_ci(GOLD, PRED, n_boot=500)
    assert (s["tp"], s["predicted"], s["support"]) == (3, 6, 6) and s["f1"] == 0.5
    assert s["f1"] == compute_ner_metrics(GOLD, PRED)["overall_f1"]
    lo, hi = s["f1_ci"]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0 and lo < hi
    assert analysis.scores_with_ci(GOLD, PRED, n_boot=500) == s  # seeded
    per_type = analysis.per_type_scores(GOLD, PRED, n_boot=100)
    # person: gold Bob, Kim; predicted Ann Lee, Bob, Kim -> P 2/3, R 1, F1 0.8
    assert per_type["person"]["f1"] == pytest.approx(0.8)
    assert per_type["location"]["f1"] == pytest.approx(2 / 3) and per_type["misc"]["f1"] == 0.0
    assert set(per_type) == {"person", "politician", "location", "politicalparty", "misc"}
    # one-word entities: gold 4 (Bob, Paris, Rome, Kim), predicted 5 (+ Party, jazz), matched 3
    b = analysis.buckets(TOKENS, GOLD, PRED, {"Ann Lee"}, n_boot=100)
    one = b["entity length"]["1 word"]
    assert (one["tp"], one["predicted"], one["support"]) == (3, 5, 4)
    seen = b["in the training split"]["seen"]  # "Ann Lee" is the only seen surface, and it is mistyped
    assert (seen["tp"], seen["support"], seen["predicted"]) == (0, 1, 1)
    h = analysis.hierarchy_scores(GOLD, PRED, n_boot=100)
    # coarse: Ann Lee becomes person = person, so 4 of 6 match
    assert h["coarse"]["f1"] == pytest.approx(4 / 6) and h["near_miss_share"] == 1.0


def test_nervaluate_schemes_by_hand():
    s = analysis.nervaluate_schemes(GOLD, PRED)
    strict = s["strict"]
    assert (strict["correct"], strict["incorrect"], strict["missed"], strict["spurious"]) == (3, 2, 1, 1)
    assert s["exact boundary"]["correct"] == 4            # Ann Lee has the right boundaries
    assert s["partial"]["partial"] == 1                    # Green Party / Party
    assert s["type"]["correct"] == 4                        # Party has the right type and overlaps


def test_suspects_compare_and_model_index():
    groups = analysis.suspect_labels([(["a", "b"], ["O", "O"], "train 3"), (["a", "b"], ["B-person", "O"], "test 7"),
                                      (["c"], ["O"], "train 1"), (["c"], ["O"], "dev 2")])
    assert len(groups) == 1 and [v["where"] for v in groups[0]["versions"]] == ["train 3", "test 7"]
    cmp = analysis.compare(GOLD, PRED, GOLD, n_boot=50)
    assert cmp["fixed"] == [0, 1, 2, 3] and cmp["broken"] == []
    assert cmp["per_type"]["person"]["delta"] == pytest.approx(0.2)
    yaml_text = analysis.model_index_yaml({"precision": 0.5, "recall": 0.5, "f1": 0.5}, model_name="m",
                                          config="politics", split="test", decoding="bio-viterbi")
    assert yaml_text.startswith("model-index:") and "value: 50.0" in yaml_text and "type: token-classification" in yaml_text


def test_music_has_27_groups_of_suspect_labels(crossner_data_dir, tmp_path, monkeypatch):
    from crossner_hf.data.target import load_target

    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path))
    d = load_target("music", data_dir=crossner_data_dir).dataset
    names = d["train"].features["ner_tags"].feature.names
    sents = [(w, [names[i] for i in t], split) for split in d for w, t in zip(d[split]["tokens"], d[split]["ner_tags"])]
    assert len(analysis.suspect_labels(sents)) == 27


def test_page_numbers_equal_the_metrics_and_sections_exist():
    html = build_report(GOLD, PRED, tokens=TOKENS, train_tokens=[["Ann", "Lee"]], train_tags=[["B-politician", "I-politician"]],
                        compare_pred=GOLD, compare_name="oracle", suspect_sentences=[(["a"], ["O"], "x"), (["a"], ["B-misc"], "y")],
                        n_boot=200)
    m = compute_ner_metrics(GOLD, PRED)
    assert _testid(html, "overall-f1") == f"{100 * m['overall_f1']:.2f}"
    assert _testid(html, "overall-precision") == f"{100 * m['overall_precision']:.2f}"
    assert _testid(html, "f1-person") == f"{100 * m['per_type']['person']['f1']:.2f}"
    assert _testid(html, "macro-f1") == f"{100 * (0.8 + 2 / 3) / 5:.2f}"
    assert html.count('data-testid="error-sentence"') == 4 and 'id="s-4"' not in html
    assert 'title="wrong-type: gold: politician · predicted: person"' in html
    assert 'href="#cell-politician--person"' in html and 'id="cell-politician--person"' in html
    assert 'id="cell-politicalparty--politicalparty"' in html  # a boundary error on the diagonal links too
    assert _testid(html, "coarse-f1") == "66.67" and "(100.00%)" in _testid(html, "near-misses")
    assert html.count('data-testid="suspect-group"') == 1 and 'data-testid="fixed"' in html
    assert "http://" not in html and "https://" not in html and "<link" not in html  # nothing from the network
    # the collapsed example lists follow the matrix, row by row ("no entity" last), whatever order errors came in
    listed = re.findall(r'<div class="cell" id="cell-([^"]+)--([^"]+)"', html)
    types = sorted({t for pair in listed for t in pair} - {"no-entity"}) + ["no-entity"]
    assert listed == sorted(listed, key=lambda gp: (types.index(gp[0]), types.index(gp[1]))), listed
    assert listed[0][0] != "no-entity" and listed[-1][0] == "no-entity"


def _browser():
    """Headless Debian chromium driven by Selenium through Debian's chromedriver (no downloads)."""
    chromium, driver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip("chromium/chromedriver not found: `apt-get install -y chromium chromium-driver` (.ci/setup does)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS + ["--window-size=1200,900"]:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
WAIT = 60  # seconds: an upper bound on a loaded machine; every wait returns as soon as its condition holds


def test_page_in_headless_chromium(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    tokens = TOKENS * 12  # long enough to scroll
    page = tmp_path / "report.html"
    page.write_text(build_report(GOLD * 12, PRED * 12, tokens=tokens, n_boot=100), encoding="utf-8")
    browser = _browser()
    try:
        wait = WebDriverWait(browser, WAIT)
        browser.get(page.as_uri())
        # 1. it renders with JavaScript: wait for the script's own effect (the filter panel shown), then read
        wait.until(lambda d: d.find_element(By.ID, "filters").is_displayed())
        f1 = browser.find_element(By.CSS_SELECTOR, '[data-testid="overall-f1"]').text
        assert f1 == f"{100 * compute_ner_metrics(GOLD, PRED)['overall_f1']:.2f}"
        assert len(browser.find_elements(By.CSS_SELECTOR, '[data-testid="error-sentence"]')) == 48
        assert browser.execute_script("return window.scrollY") == 0
        # 2. a confusion cell's link scrolls to its examples
        browser.find_element(By.CSS_SELECTOR, '[data-testid="cell-location--no-entity"]').click()
        wait.until(lambda d: d.execute_script("return location.hash") == "#cell-location--no-entity")
        wait.until(lambda d: d.execute_script("return window.scrollY") > 0)
        top = browser.execute_script(
            "return document.getElementById('cell-location--no-entity').getBoundingClientRect().top")
        assert -2 <= top < 900  # the examples are in view (scrolled to the top, sub-pixel)
        # 3. the filter hides sentences without the chosen kind
        browser.execute_script(
            "document.querySelectorAll('input[name=kind]').forEach(c => { c.checked = c.value === 'spurious'; });"
            "document.getElementById('filters').dispatchEvent(new Event('change'))")
        shown = "return Array.from(document.querySelectorAll('[data-testid=error-sentence]')).filter(e => !e.hidden).length"
        wait.until(lambda d: d.execute_script(shown) == 12)
        # 4. a screenshot a person can look at
        assert browser.get_screenshot_as_png()[:8] == b"\x89PNG\r\n\x1a\n"
        browser.save_screenshot(str(tmp_path / "report.png"))
    finally:
        browser.quit()


def test_report_command_end_to_end(tmp_path, tiny_bert_dir, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.train import run_train
    from command_inputs import train_args

    out = tmp_path / "model"
    run_train(*train_args(
        output_dir=str(out), model_name_or_path=tiny_bert_dir, domain="politics", data_dir=str(crossner_data_dir),
        few_shot=16, max_steps=4, per_device_train_batch_size=4, learning_rate=1e-3, use_cpu=True, disable_tqdm=True,
        eval_strategy="steps", save_strategy="steps", eval_steps=2, save_steps=2)).results
    from crossner_hf.cli import main

    assert main(["report", "--model", str(out), "--compare", str(out), "--domain", "politics", "--data_dir",
                 str(crossner_data_dir), "--n_boot", "100", "--output", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    recorded = json.loads((out / "results.json").read_text())["per_seed"][0]["test"]["overall_f1"]
    assert _testid(html, "overall-f1") == f"{100 * recorded:.2f}"  # the model's own decoding, as trained
    assert 'data-testid="compare-table"' in html and html.count('data-testid="suspect-group"') == 1  # politics: 1


def test_model_index_yaml_holds_plain_numbers():
    import numpy as np
    import yaml

    text = analysis.model_index_yaml({m: np.float64(0.5) for m in ("precision", "recall", "f1")},
                                     model_name="m", config="politics", split="test", decoding="argmax")
    assert "!!" not in text
    metrics = yaml.safe_load(text)["model-index"][0]["results"][0]["metrics"]
    assert [m["value"] for m in metrics] == [50.0, 50.0, 50.0]
