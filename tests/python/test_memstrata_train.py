"""The Memstrata estimator's trainer (tiermem.memstrata_train) on samples with a known answer.

The samples are built so that the truth is the paper's premise (§4.2): whether a VM is an
outlier depends on its misses to CXL per kilo-instruction, the local-miss ratio × L3 MPKI,
and the miss ratio is only visible through the L3 miss latency (a line with known slope).
A forest on the estimated MPKI must then beat one on MPKI alone, the proxy must recover the
line, and the exported ONNX model must carry the proxy and label rows as scikit-learn does.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("skl2onnx")
onnx = pytest.importorskip("onnx")

from tiermem import memstrata_train as mt  # noqa: E402

#: The hidden line: L3 miss latency = LAT0 + LAT_PER_MISS × miss ratio (ns).
LAT0, LAT_PER_MISS = 100.0, 400.0


def samples(workloads: int = 40, per: int = 8, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for w in range(workloads):
        mpki = rng.uniform(1.0, 30.0)
        for _ in range(per):
            miss = rng.uniform(0.0, 0.6)
            rows.append({
                "workload": f"w{w:02}",
                "category": "synthetic",
                "dedicated_share": 0.0,
                "noise_draw": 0,
                "l3_miss_latency_ns": LAT0 + LAT_PER_MISS * miss + rng.normal(0.0, 4.0),
                "l2_miss_latency_ns": rng.uniform(10.0, 20.0),
                "dtlb_miss_latency_ns": rng.uniform(20.0, 40.0),
                "l2_mpki": mpki * rng.uniform(1.0, 2.0),
                "l3_mpki": mpki,
                "true_mpki": mpki,
                "miss_ratio": miss,
                # 1 % slowdown per CXL miss per kilo-instruction: an outlier above 5.
                "slowdown": 0.01 * miss * mpki,
            })
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("memstrata")
    frame = samples()
    frame.to_csv(d / "features.csv", index=False)
    result = mt.train(d / "features.csv", d / "model.onnx", d / "report.json")
    return frame, result, d


def test_the_estimated_mpki_beats_mpki_alone_on_held_out_workloads(trained):
    _, result, d = trained
    assert json.loads((d / "report.json").read_text()) == result
    assert result["workloads"] == 40 and result["splits"] == mt.SPLITS
    assert 0.2 < result["outlier_share"] < 0.8, result["outlier_share"]
    assert result["validation_accuracy_mean"] >= 0.85, result
    assert result["validation_accuracy_mean"] >= result["mpki_only_accuracy_mean"] + 0.05, result
    # The estimated MPKI alone carries the answer here (slowdown ∝ miss ratio × MPKI).
    assert result["est_mpki_only_accuracy_mean"] >= result["mpki_only_accuracy_mean"] + 0.05, result
    importances = result["feature_importances"]
    assert max(importances, key=importances.get) == "est_mpki", importances
    # The yardsticks beside the accuracies: the "no outlier" answer and Fig. 9a's r².
    frame = trained[0]
    assert result["constant_accuracy_mean"] == pytest.approx(1.0 - result["outlier_share"], abs=0.1)
    assert result["validation_accuracy_mean"] > result["constant_accuracy_mean"], result
    assert result["mpki_slowdown_r2"] == pytest.approx(np.corrcoef(frame["true_mpki"], frame["slowdown"])[0, 1] ** 2)


def test_the_paper_protocol_takes_one_sample_per_workload(trained):
    frame, result, _ = trained
    p = result["paper_protocol"]
    assert p["samples"] == 40 and p["held_out"] == 20, p
    first = frame.drop_duplicates("workload")
    assert p["outlier_share"] == pytest.approx((first["slowdown"] > mt.OUTLIER).mean())
    assert 0.5 <= p["validation_accuracy_min"] <= p["validation_accuracy_mean"] <= p["validation_accuracy_max"] <= 1.0
    assert p["constant_accuracy_mean"] == pytest.approx(1.0 - p["outlier_share"], abs=0.15)
    # The margin over "no outlier" is per split, so its mean is the difference of the means.
    assert result["accuracy_over_constant_mean"] == pytest.approx(
        result["validation_accuracy_mean"] - result["constant_accuracy_mean"])
    assert result["accuracy_over_constant_min"] <= result["accuracy_over_constant_mean"]
    assert 0.5 < result["balanced_accuracy_mean"] <= 1.0 and result["ungated"]["reason"]


def test_balanced_accuracy_weighs_both_classes_equally():
    truth = np.array([True, False, False, False])
    assert mt.balanced_accuracy(np.zeros(4, dtype=bool), truth) == 0.5
    assert mt.balanced_accuracy(truth.copy(), truth) == 1.0
    assert mt.balanced_accuracy(np.array([True, True, False, False]), truth) == pytest.approx(0.5 * (1 + 2 / 3))
    assert np.isnan(mt.balanced_accuracy(truth, np.zeros(4, dtype=bool)))


def test_the_proxy_recovers_the_latency_line(trained):
    _, result, _ = trained
    proxy = result["proxy"]
    assert proxy["slope_per_ns"] == pytest.approx(1.0 / LAT_PER_MISS, rel=0.05)
    assert proxy["intercept"] == pytest.approx(-LAT0 / LAT_PER_MISS, abs=0.02)
    assert result["proxy_r2_mean"] > 0.95


def test_the_onnx_model_carries_the_proxy_and_labels_as_scikit_learn_does(trained):
    from onnx.reference import ReferenceEvaluator

    frame, result, d = trained
    model = onnx.load(str(d / "model.onnx"))
    onnx.checker.check_model(model)
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["memstrata.features"] == ",".join(mt.FEATURES)
    assert float(meta["memstrata.proxy_slope_per_ns"]) == result["proxy"]["slope_per_ns"]
    assert float(meta["memstrata.proxy_intercept"]) == result["proxy"]["intercept"]
    assert float(meta["memstrata.outlier_slowdown"]) == mt.OUTLIER
    full = mt.with_estimate(frame, (result["proxy"]["intercept"], result["proxy"]["slope_per_ns"]))
    x = full[mt.FEATURES].to_numpy(np.float32)
    outputs = ReferenceEvaluator(model).run(None, {"features": x})
    labels = np.asarray(outputs[0]).astype(bool)
    # The shipped forest is forest(0) on every sample: refit it and compare row by row.
    want = mt.forest(0).fit(x, full["slowdown"] > mt.OUTLIER).predict(x)
    assert (labels == want).mean() >= 0.99, (labels != want).sum()
    assert (labels == (full["slowdown"] > mt.OUTLIER)).mean() == pytest.approx(result["training_accuracy"], abs=0.01)


@pytest.mark.parametrize(
    "mangle, named",
    [
        (lambda f: f.drop(columns=["l3_miss_latency_ns"]), "l3_miss_latency_ns"),
        (lambda f: f.assign(slowdown="fast"), "slowdown"),
        (lambda f: f.assign(workload="w00"), "2 workloads"),
    ],
)
def test_bad_samples_get_one_line_naming_the_problem_and_exit_2(tmp_path, capsys, mangle, named):
    mangle(samples(workloads=4, per=2)).to_csv(tmp_path / "bad.csv", index=False)
    code = mt.main([str(tmp_path / "bad.csv"), str(tmp_path / "m.onnx"), str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and named in err and "tiermem memstrata train" in err, err
    assert not (tmp_path / "m.onnx").exists()


def test_a_missing_samples_file_gets_one_line_and_exit_2(tmp_path, capsys):
    code = mt.main([str(tmp_path / "none.csv"), str(tmp_path / "m.onnx"), str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "none.csv" in err, err
