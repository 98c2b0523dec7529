#!/usr/bin/env bash
# Train the judge on a lent GPU machine (the tool library's `device` entry). Its python3 holds torch,
# transformers and the few libraries the training imports (numpy, pyyaml, markdown-it-py, click, httpx, rich);
# the app's others are not needed. ../shared does not travel, so the SQuAD files go in .device/ (ignored).
#
# Here, once:   mkdir -p .device/train && cp ../shared/train/*.json.gz .device/train/
# Then:         run(command="bash scripts/device-train-judge.sh --init rag/deciding/judge_model --epochs 8 ...",
#                   carry=[".device"])
# Any lab/train_judge.py option passes through (not --out, --train-dir); start from a judge (--init), since
# the embedder's package is not installed there. What comes back under $OUT, in files
# of at most 16 MiB: train.log, the weights in parts, the rest of the judge in a tar. Put together here:
#   cat FILES_AT/model.safetensors.part-* > rag/deciding/judge_model/model.safetensors
#   tar -C rag/deciding/judge_model -xf FILES_AT/judge-rest.tar
set -euo pipefail
: "${OUT:?set OUT to the folder whose files come back}"
python=${PYTHON:-python3}
judge=$(mktemp -d)
trap 'rm -rf "$judge"' EXIT
PYTHONUNBUFFERED=1 "$python" lab/train_judge.py --train-dir .device/train --out "$judge" "$@" 2>&1 | tee "$OUT/train.log"
split -b 15M "$judge/model.safetensors" "$OUT/model.safetensors.part-"
tar -C "$judge" -cf "$OUT/judge-rest.tar" --exclude model.safetensors .
ls -l "$OUT"
