# The second device call of `python bench/gpu.py device DIR` (bench/notes/gpu.md): install the
# wheels that travelled, then the judged recipe at its defaults on SciFact's shared train judgments
# and `bench/gpu.py --parts index`; the first call left the weights and SciFact in /root/stash.
# Run from the repository root there, with DIR/b carried: bash DIR/b/run.sh DIR/b
B=${1:-.device/b}
test -d /root/stash/minilm || { echo "no /root/stash: a fresh machine (run the first call again)"; exit 3; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$B"/whl/*.whl || exit 4
export PYTHONPATH=$PWD/$B/stubs:/tmp/site:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1 ENCODR_HOME=/tmp/encodr-home
nproc; lscpu | grep -i "model name"; nvidia-smi --query-gpu=name,memory.total --format=csv
cp /root/stash/scifact/corpus.jsonl "$B"/gpu/scifact.jsonl
S=$(date +%s)
timeout "${JUDGED_S:-300}" python3 bench/judged.py --model /root/stash/minilm --data /root/stash/scifact \
  --out "$OUT"/judged_gpu.json > "$OUT"/judged.log 2>&1
echo "judged rc=$? in $(( $(date +%s) - S )) s"; tail -40 "$OUT"/judged.log
S=$(date +%s)
timeout "${INDEX_S:-200}" python3 bench/gpu.py run "$B"/gpu --parts index --rounds "${ROUNDS:-1}" --out "$OUT" \
  > "$OUT"/index.log 2>&1
echo "index rc=$? in $(( $(date +%s) - S )) s"; tail -30 "$OUT"/index.log
