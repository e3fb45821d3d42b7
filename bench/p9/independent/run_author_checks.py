#!/usr/bin/env python3
"""Run the later authors' own check scripts (check_ir.py … check_jc.py) on their scenarios.

Those authors wrote two scenarios each into `one/<id>/` and `two/<id>/` beside their
`check.py`; which of the two went to dev/ and which to test/ was fixed before either was read
(ir, it, iv, ix, iz, jb: one → dev; is, iu, iw, iy, ja, jc: two → dev). Their scripts are kept as they wrote them, so
this copies each pair back into that layout in a temp folder and runs the script there. Pure
stdlib; exit 1 when any author's check fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAIRS = {  # tag: (one, two) as (split, scenario id)
    "ir": (("dev", "ir-billing-pg16-logical-repl"), ("test", "ir-avvio-freddo-android")),
    "is": (("test", "is-kr-doorlock-delta-ota"), ("dev", "is-es-rutas-pg16-logical")),
    "it": (("dev", "it-shelf-vision-rknn-int8"), ("test", "it-stadtwerke-nachtlauf-pg16")),
    "iu": (("test", "iu-thumbd-arm64-port"), ("dev", "iu-rapprochement-crm-sirene")),
    "iv": (("dev", "iv-ja-seikyu-pdf-gotenberg"), ("test", "iv-ptbr-pix-conciliacao")),
    "iw": (("test", "iw-nrt-swiftly-etas"), ("dev", "iw-pgbackrest-offsite-nl")),
    "ix": (("dev", "ix-reranker-kd-ledger"), ("test", "ix-siparis-pg16-gecis")),
    "iy": (("test", "iy-haozhen-rn074-newarch"), ("dev", "iy-ir-jenkins-cli-fileread")),
    "iz": (("dev", "iz-orders-cdc-clickhouse"), ("test", "iz-markfukt-lorawan-sleep")),
    "ja": (("test", "ja-pg16-logical-upgrade"), ("dev", "ja-pl-payu-zwroty")),
    "jb": (("dev", "jb-roomsrv-tick-p99"), ("test", "jb-dashboard-vite-migration")),
    "jc": (("test", "jc-lago-sap-wareneingang"), ("dev", "jc-eks-couts-nordik")),
}


def main() -> int:
    failed = []
    for tag, pairs in PAIRS.items():
        with tempfile.TemporaryDirectory(prefix=f"check-{tag}-") as temp:
            work = Path(temp)
            shutil.copy(HERE / f"check_{tag}.py", work / "check.py")
            for folder, (split, scenario) in zip(("one", "two"), pairs, strict=True):
                shutil.copytree(HERE / split / scenario, work / folder / scenario)
            done = subprocess.run(
                [sys.executable, "check.py"], cwd=work, capture_output=True, text=True, check=False
            )
        last = (done.stdout.strip().splitlines() or [""])[-1]
        print(f"{tag}: exit {done.returncode}: {last}")
        if done.returncode != 0:
            failed.append(tag)
            print(done.stdout + done.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
