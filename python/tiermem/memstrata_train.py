"""Train Memstrata's slowdown estimator (OSDI'24 §4.2) on simulator samples.

``tiermem memstrata train`` writes the samples (``features.csv``: per workload, dedicated
share and noisy reading, the counters the cores expose plus the truth) and runs::

    python -m tiermem.memstrata_train features.csv model.onnx report.json

1. The miss-ratio proxy: a linear fit of the local-miss ratio on the L3 miss latency of
   demand loads (§4.2, Fig. 9b), on the training workloads only.
2. The outlier classifier: a random forest (100 trees, §4.2) on the paper's five features —
   the estimated MPKI (proxy miss ratio × L3 MPKI), L3 and L2 miss latency, DTLB load-miss
   latency and L2 MPKI — predicting slowdown > 5 %.
3. Validation by workload: the workloads are split evenly (all samples of a workload on one
   side), repeated over seeds; accuracy beside two single-feature forests: the true MPKI
   (Fig. 9a's, measured alone) and the estimated MPKI (the one a hypervisor has per VM),
   and two yardsticks: the accuracy of answering "no outlier" for every held-out sample,
   and Fig. 9a's r² of slowdown on the true MPKI. Twice: over every sample (each workload
   at every dedicated share, several noisy readings), and under the paper's protocol
   (§4.2: one sample per workload, its measurement under hardware tiering alone as in
   §3.2, the workloads split 50/50), where the 88 % it reports was measured.
4. The shipped model is trained on every workload and exported as ONNX (skl2onnx,
   probabilities as a plain tensor); the proxy's coefficients ride in its metadata, so the
   Rust allocator needs nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: Slowdown above which a VM is an outlier (§2.2 goal #4).
OUTLIER = 0.05
#: The classifier's inputs, in the order the ONNX model takes them.
FEATURES = ["est_mpki", "l3_miss_latency_ns", "l2_miss_latency_ns", "dtlb_miss_latency_ns", "l2_mpki"]
SPLITS = 10
TREES = 100


def fit_proxy(frame: pd.DataFrame) -> tuple[float, float]:
    """Least-squares line miss_ratio = intercept + slope x L3 miss latency."""
    slope, intercept = np.polyfit(frame["l3_miss_latency_ns"], frame["miss_ratio"], 1)
    return float(intercept), float(slope)


def with_estimate(frame: pd.DataFrame, proxy: tuple[float, float]) -> pd.DataFrame:
    intercept, slope = proxy
    est = np.clip(intercept + slope * frame["l3_miss_latency_ns"], 0.0, 1.0)
    return frame.assign(est_mpki=est * frame["l3_mpki"])


def forest(seed: int):
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=TREES, random_state=seed, n_jobs=1)


def held_out_predictions(tr: pd.DataFrame, te: pd.DataFrame, columns: list[str], seed: int) -> np.ndarray:
    """The outlier answers on ``te`` of a forest trained on ``tr``'s ``columns``."""
    clf = forest(seed).fit(tr[columns].to_numpy(np.float32), tr["outlier"])
    return np.asarray(clf.predict(te[columns].to_numpy(np.float32)), dtype=bool)


def held_out_accuracy(tr: pd.DataFrame, te: pd.DataFrame, columns: list[str], seed: int) -> float:
    """Accuracy on ``te`` of a forest trained on ``tr``'s ``columns``."""
    return float((held_out_predictions(tr, te, columns, seed) == te["outlier"].to_numpy()).mean())


def balanced_accuracy(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Mean of the share of outliers found and the share of the rest left alone (NaN when
    the held-out half has only one kind)."""
    truth = truth.astype(bool)
    if truth.all() or not truth.any():
        return float("nan")
    return float(0.5 * ((predicted & truth).sum() / truth.sum() + (~predicted & ~truth).sum() / (~truth).sum()))


#: The paper's protocol (§4.2): one sample per workload, the one §3.2 measured (hardware
#: tiering alone, no dedicated memory), first noisy reading.
PAPER_PROTOCOL = ("one sample per workload (dedicated share 0: hardware tiering alone, as §3.2 measured; "
                  "first noisy reading), workloads split 50/50")

#: Why balanced accuracy and MPKI-only are reported and not gated.
UNGATED_REASON = (
    "MPKI-only: the paper's 63 % is below answering 'no outlier' for every VM on its own population "
    "(73-82 % of its workloads are within 5 %, Fig. 5), so it measures the paper's 57-workload sample more "
    "than what MPKI carries, and a gate on it would fit this population to that sample; here the slowdown "
    "is nearly a function of MPKI (docs/simulator.md), so MPKI alone scores close to the full estimator. "
    "Balanced accuracy: the paper does not report it, so there is no number to hold it to; it is shown "
    "because plain accuracy on a population with ~25 % outliers rewards saying 'no outlier'."
)


def validate(frame: pd.DataFrame, splits: int) -> dict[str, list[float]]:
    """Held-out scores over ``splits`` even splits of the workloads (all samples of a
    workload on one side; the proxy fitted on the training side)."""
    workloads = np.array(sorted(frame["workload"].unique()))
    out: dict[str, list[float]] = {k: [] for k in ("accuracy", "mpki_only", "est_mpki_only", "constant",
                                                    "balanced", "mpki_only_balanced", "proxy_r2")}
    for seed in range(splits):
        rng = np.random.default_rng(seed)
        held_out = set(rng.permutation(workloads)[: len(workloads) // 2])
        test_mask = frame["workload"].isin(held_out)
        tr, te = frame[~test_mask], frame[test_mask]
        proxy = fit_proxy(tr)
        tr, te = with_estimate(tr, proxy), with_estimate(te, proxy)
        truth = te["outlier"].to_numpy(dtype=bool)
        out["proxy_r2"].append(float(np.corrcoef(tr["l3_miss_latency_ns"], tr["miss_ratio"])[0, 1] ** 2))
        full = held_out_predictions(tr, te, FEATURES, seed)
        mpki = held_out_predictions(tr, te, ["true_mpki"], seed)
        out["accuracy"].append(float((full == truth).mean()))
        out["balanced"].append(balanced_accuracy(full, truth))
        out["mpki_only"].append(float((mpki == truth).mean()))
        out["mpki_only_balanced"].append(balanced_accuracy(mpki, truth))
        out["est_mpki_only"].append(held_out_accuracy(tr, te, ["est_mpki"], seed))
        # The answer a classifier must beat: "no outlier" for every held-out sample.
        out["constant"].append(float((~truth).mean()))
    return out


def _mean(xs: list[float]) -> float:
    return float(np.nanmean(xs))


#: Columns ``tiermem memstrata train`` writes and the trainer reads.
COLUMNS = ["workload", "slowdown", "miss_ratio", "l3_miss_latency_ns", "l3_mpki", "l2_miss_latency_ns",
           "dtlb_miss_latency_ns", "l2_mpki", "true_mpki"]


#: The fix every refusal names.
RETRAIN = "regenerate the samples with `tiermem memstrata train`"


class SampleError(ValueError):
    """The samples file cannot be trained on; the message names the file and the fix."""


def read_samples(csv: Path) -> pd.DataFrame:
    def refuse(problem: str) -> SampleError:
        return SampleError(f"{csv}: {problem}; {RETRAIN}")

    try:
        frame = pd.read_csv(csv)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise refuse(f"cannot read the samples ({e})") from e
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise refuse(f"no column {', '.join(missing)}")
    numeric = [c for c in COLUMNS[1:] if not pd.api.types.is_numeric_dtype(frame[c]) or frame[c].isna().any()]
    if numeric:
        raise refuse(f"column {', '.join(numeric)} has empty or non-numeric values")
    if frame["workload"].nunique() < 2:
        raise refuse("samples of at least 2 workloads are needed to hold some out")
    return frame


def train(csv: Path, model: Path, report: Path) -> dict:
    frame = read_samples(csv)
    frame = frame.assign(outlier=frame["slowdown"] > OUTLIER)
    workloads = np.array(sorted(frame["workload"].unique()))
    v = validate(frame, SPLITS)
    margin = [a - c for a, c in zip(v["accuracy"], v["constant"], strict=True)]
    proxy = fit_proxy(frame)
    full = with_estimate(frame, proxy)
    clf = forest(0).fit(full[FEATURES].to_numpy(np.float32), full["outlier"])
    export(clf, proxy, model)
    result = {
        "samples": len(frame),
        "workloads": len(workloads),
        "outlier_share": float(frame["outlier"].mean()),
        "splits": SPLITS,
        "validation_accuracy_mean": _mean(v["accuracy"]),
        "validation_accuracy_min": float(np.min(v["accuracy"])),
        "mpki_only_accuracy_mean": _mean(v["mpki_only"]),
        "mpki_only_accuracy_min": float(np.min(v["mpki_only"])),
        "est_mpki_only_accuracy_mean": _mean(v["est_mpki_only"]),
        "constant_accuracy_mean": _mean(v["constant"]),
        # Points above answering "no outlier" for every held-out sample, per split.
        "accuracy_over_constant_mean": _mean(margin),
        "accuracy_over_constant_min": float(np.min(margin)),
        "balanced_accuracy_mean": _mean(v["balanced"]),
        "mpki_only_balanced_accuracy_mean": _mean(v["mpki_only_balanced"]),
        # Fig. 9a's statistic: r² of slowdown on the true MPKI, over every sample.
        "mpki_slowdown_r2": float(np.corrcoef(frame["true_mpki"], frame["slowdown"])[0, 1] ** 2),
        "training_accuracy": float((clf.predict(full[FEATURES].to_numpy(np.float32)) == full["outlier"]).mean()),
        "proxy_r2_mean": _mean(v["proxy_r2"]),
        "proxy": {"intercept": proxy[0], "slope_per_ns": proxy[1]},
        "feature_importances": dict(zip(FEATURES, map(float, clf.feature_importances_), strict=True)),
        "paper_protocol": paper_protocol(frame),
        "ungated": {"metrics": ["mpki_only_accuracy_mean", "balanced_accuracy_mean",
                                "paper_protocol.mpki_only_accuracy_mean", "paper_protocol.balanced_accuracy_mean"],
                    "reason": UNGATED_REASON},
        "paper": {"validation_accuracy": 0.88, "mpki_only_accuracy": 0.63, "proxy_r2": 0.87, "mpki_slowdown_r2": 0.73},
    }
    report.write_text(json.dumps(result, indent=2) + "\n")
    return result


def paper_protocol(frame: pd.DataFrame) -> dict:
    """§4.2's validation as the paper ran it: one sample per workload, split 50/50."""
    one = frame
    if "dedicated_share" in frame.columns:
        one = one[one["dedicated_share"] == one["dedicated_share"].min()]
    if "noise_draw" in frame.columns:
        one = one[one["noise_draw"] == one["noise_draw"].min()]
    one = one.drop_duplicates("workload")
    v = validate(one, SPLITS)
    return {
        "protocol": PAPER_PROTOCOL,
        "samples": len(one),
        "held_out": len(one) // 2,
        "outlier_share": float(one["outlier"].mean()),
        "validation_accuracy_mean": _mean(v["accuracy"]),
        "validation_accuracy_min": float(np.min(v["accuracy"])),
        "validation_accuracy_max": float(np.max(v["accuracy"])),
        "constant_accuracy_mean": _mean(v["constant"]),
        "mpki_only_accuracy_mean": _mean(v["mpki_only"]),
        "balanced_accuracy_mean": _mean(v["balanced"]),
    }


def export(clf, proxy: tuple[float, float], path: Path) -> None:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType

    onx = convert_sklearn(
        clf,
        initial_types=[("features", FloatTensorType([None, len(FEATURES)]))],
        options={id(clf): {"zipmap": False}},
        target_opset={"": 17, "ai.onnx.ml": 3},
    )
    for key, value in (
        ("memstrata.proxy_intercept", repr(proxy[0])),
        ("memstrata.proxy_slope_per_ns", repr(proxy[1])),
        ("memstrata.features", ",".join(FEATURES)),
        ("memstrata.outlier_slowdown", repr(OUTLIER)),
    ):
        entry = onx.metadata_props.add()
        entry.key, entry.value = key, value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(onx.SerializeToString())


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print("usage: python -m tiermem.memstrata_train FEATURES.csv MODEL.onnx REPORT.json", file=sys.stderr)
        return 2
    try:
        result = train(Path(args[0]), Path(args[1]), Path(args[2]))
    except ImportError as e:
        print(f"tiermem.memstrata_train: {e}; install scikit-learn and skl2onnx (make setup)", file=sys.stderr)
        return 2
    except SampleError as e:
        print(f"tiermem.memstrata_train: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in result.items() if k != "paper"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
