#!/bin/sh
# The claims over MTRAG's sessions (issue 61), resumable: the no-LLM protocols once, then the
# LLM arms (c-boundaries' two, b-answers' dense arm; b-answers' hybrid arm is c-boundaries'
# boundaries-on arm, read from the reply cache) with a growing per-collection prefix, so
# that every finished step is a paired sample stratified by collection (N sessions per
# collection, the pool 4N). Every reply is cached and packed
# (experiments/claims/llm-replies-sessions.jsonl): a rerun replays what is done.
set -e
cd "$(dirname "$0")/../../.."
.venv/bin/agentic-rag claims --only a-iterations@sessions --only b-fusion@sessions
for n in ${SESSION_STEPS:-1 2 3 4 6 8 10 12 16 20 25 30 40 50 75 100 125 157}; do
  echo "=== $(date -u +%H:%M:%S) llm-sample $n per collection"
  .venv/bin/agentic-rag claims --only c-boundaries@sessions --only b-answers@sessions \
    --llm-sample "$n"
done
