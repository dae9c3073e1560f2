"""Reference for tests/analysis/analysis_test.cpp: scikit-learn's DBSCAN and
silhouette_score on the cases the test wrote. Run with Debian's
/usr/bin/python3 (python3-sklearn). Input: JSON list of {values, eps,
min_samples}; output: JSON list of {labels, silhouette}."""
import json
import sys

import numpy as np
from sklearn.cluster import DBSCAN
from sklearn.metrics import silhouette_score

cases = json.load(open(sys.argv[1]))
out = []
for case in cases:
    x = np.asarray(case["values"], dtype=float).reshape(-1, 1)
    labels = DBSCAN(eps=case["eps"], min_samples=case["min_samples"]).fit(x).labels_
    keep = labels >= 0
    sil = None
    if len(set(labels[keep])) >= 2:
        sil = float(silhouette_score(x[keep], labels[keep]))
    out.append({"labels": labels.tolist(), "silhouette": sil})
json.dump(out, open(sys.argv[2], "w"))
