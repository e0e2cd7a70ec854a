"""Independent cross-check of pbg releases with pycanon (run by .ci/run in a venv).

For several nodes and policies on the shipped adult data, `pbg anonymize` writes a CSV release
and a JSON report; pycanon recomputes k-anonymity, distinct l-diversity and entropy
l-diversity from the release alone, and they must agree with pbg's report. For releases without
suppressed rows (whose distribution of the sensitive attribute is then the input's, which pycanon
takes from the release) t-closeness (equal distance, the sensitive values read as text), basic
β-likeness and δ-disclosure must agree too.

usage: python check.py PATH/TO/pbg
"""

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from pycanon import anonymity

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "datasets" / "adult" / "adult.toml"
QIS = ["age", "workclass", "education", "marital-status", "race", "sex",
       "native-country", "salary-class"]
SENSITIVE = "occupation"

RUNS = [
    ["--node", "0,0,0,0,0,0,0,0"],
    ["--node", "1,1,1,1,1,1,1,1"],
    ["--node", "3,1,1,2,1,1,2,0"],
    ["--pick", "--require", "k>=5,l>=3", "--minimize", "glm"],
    ["--pick", "lex", "--require", "k>=10", "--objectives", "glm,k"],
    ["--pick", "wtd", "--require", "l>=2", "--objectives", "k,l,glm", "--weights", "1,1,2"],
    ["--node", "3,1,1,2,1,1,2,0", "--suppression-limit", "0"],
    ["--node", "4,2,2,2,1,1,3,1", "--suppression-limit", "0"],
    ["--pick", "--require", "k>=5,t_equal<=0.6", "--minimize", "glm", "--suppression-limit", "0"],
]


def main() -> int:
    pbg = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, args in enumerate(RUNS):
            out = Path(tmp) / f"release{i}.csv"
            proc = subprocess.run([pbg, "anonymize", str(PROFILE), *args, "--output", str(out)],
                                  capture_output=True, text=True, check=True)
            report = json.loads(proc.stdout)
            df = pd.read_csv(out, dtype=str, keep_default_na=False)
            k = anonymity.k_anonymity(df, QIS)
            l = anonymity.l_diversity(df, QIS, [SENSITIVE])
            # Entropy l from pycanon is floor(exp(min entropy)); pbg reports exp(min entropy).
            le = anonymity.entropy_l_diversity(df, QIS, [SENSITIVE])
            ix = report["indices"]
            ok = (k == ix["k"] and l == ix["l_distinct"]
                  and le == math.floor(ix["l_entropy"] + 1e-9)
                  and len(df) == report["rows_released"]
                  and report["rows_released"] + report["suppressed"] == report["rows_in"])
            # pycanon measures classes one dataframe filter at a time: small class counts only.
            if report["suppressed"] == 0 and ix["classes"] <= 3000:
                t = anonymity.t_closeness(df, QIS, [SENSITIVE])
                beta = anonymity.basic_beta_likeness(df, QIS, [SENSITIVE])
                delta = anonymity.delta_disclosure(df, QIS, [SENSITIVE])
                close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(a))
                dist_ok = (close(t, ix["t_equal"]) and close(max(beta, 0.0), ix["beta"])
                           and close(delta, ix["delta_disclosure"]))
                print(f"{'':60} pycanon t={t:.9f} beta={beta:.6f} delta={delta:.6f} | pbg "
                      f"t_equal={ix['t_equal']:.9f} beta={ix['beta']:.6f} "
                      f"delta={ix['delta_disclosure']:.6f} {'OK' if dist_ok else 'MISMATCH'}")
                ok = ok and dist_ok
            print(f"{' '.join(args):60} node={report['node']} pycanon k={k} l={l} l_entropy={le} | "
                  f"pbg k={ix['k']} l={ix['l_distinct']} l_entropy={ix['l_entropy']:.4f} "
                  f"rows={report['rows_released']}+{report['suppressed']} {'OK' if ok else 'MISMATCH'}")
            failures += not ok
    if failures:
        print(f"{failures} release(s) disagree with pycanon")
        return 1
    print("pycanon agrees with pbg on every release")
    return 0


if __name__ == "__main__":
    sys.exit(main())
