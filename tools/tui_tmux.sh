#!/usr/bin/env bash
# A real-terminal run of `encodr tui` (issue 15): tmux send-keys drives the Train pane — the bundled
# MiniLM, the word recipe, a 2,000-word file, WordSim-353 as the dev set — and capture-pane saves
# the screen while training (the live loss curve) and when it is done (the result).
#
#   bash tools/tui_tmux.sh [WORKDIR]      # writes docs/tui-tmux-running.txt and docs/tui-tmux-done.txt
#
# The Tab count reaches the Train pane's directory tree from its first field; it follows the
# word recipe's field list (tests/tui/test_panes.py checks the pane, this script only drives it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
rm -rf word-minilm home
python -c "from encodr.data.text import top_words; open('words2000.txt', 'w').write('\n'.join(top_words(2000)) + '\n')"
session=encodr-bench-$$
tmux new-session -d -s "$session" -x 160 -y 48 "cd '$work' && ENCODR_HOME='$work/home' encodr tui; sleep 30"
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
sleep 8                                          # the app starts (torch, textual)
tmux send-keys -t "$session" F5; sleep 2
for _ in $(seq 26); do tmux send-keys -t "$session" Tab; sleep 0.2; done   # → the directory tree
tmux send-keys -t "$session" Down Down Enter; sleep 2                        # → words2000.txt (preview)
tmux send-keys -t "$session" Tab Enter; sleep 1; tmux send-keys -t "$session" Down Down Enter; sleep 1   # dev: wordsim353
tmux send-keys -t "$session" Tab; tmux send-keys -t "$session" -l word-minilm; sleep 0.5               # output folder
tmux send-keys -t "$session" Tab Enter                                                                  # Start
for _ in $(seq 120); do                          # the curve, once a dozen steps are in
    sleep 1
    if tmux capture-pane -t "$session" -p | grep -Eq 'step (1[2-9]|20)/20'; then break; fi
done
tmux capture-pane -t "$session" -p > "$repo/docs/tui-tmux-running.txt"
for _ in $(seq 300); do
    sleep 1
    if tmux capture-pane -t "$session" -p | grep -q 'saved '; then break; fi
done
sleep 1
tmux capture-pane -t "$session" -p > "$repo/docs/tui-tmux-done.txt"
python -c "from sentence_transformers import SentenceTransformer as S; m = S('word-minilm'); print('SentenceTransformer loads it:', m.encode(['cat', 'dog']).shape)"
ENCODR_HOME="$work/home" encodr runs
echo "wrote $repo/docs/tui-tmux-running.txt and $repo/docs/tui-tmux-done.txt"
