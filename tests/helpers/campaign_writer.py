"""A writer process for the crash/resume test: measures a design's pending rows one by one.

Prints ``committed <key>`` after each measurement is stored, then sleeps a little so the parent can
kill it mid-campaign. Values come from the synthetic toy objective, so they are reproducible.
"""

import sys
import time

import pandas as pd

from engine.runners.synthetic import evaluate
from engine.space.configs import config_keys
from storage import Store

db, study_name, design_id, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with Store(db) as store:
    study = store.get_study(study_name)
    pending = store.design_rows(study_name, design_id, pending_only=True)
    for _, row in pending.iterrows():
        config = {name: row[name] for name in study.spec.space.names}
        frame = pd.DataFrame([config])
        value = float(evaluate(study.spec.runner, frame, config_keys(study.spec.space, frame))[0])
        store.record_measurement(study, config, value, "ok", repeat=0, design_id=design_id, strategy="design")
        print("committed", config_keys(study.spec.space, frame)[0], flush=True)
        time.sleep(pause)
