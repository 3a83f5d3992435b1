#!/usr/bin/env bash
# The service benchmarks on this machine: wyoming-bench (third party, one request at a time; one-shot and
# streaming) and tools/load_rooms.py (1..16 rooms at once), against a server started here with the given model.
#
#   pip install wyoming-bench
#   bash tools/bench_wyoming.sh [MODEL]          # MODEL defaults to builtin:tiny
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-builtin:tiny}
port=${PORT:-10299}

wyoming-chorus --uri "tcp://127.0.0.1:$port" --model "$model" --no-zeroconf --metrics-port 0 &
server=$!
trap 'kill -TERM $server; wait $server' EXIT
for _ in $(seq 120); do  # the first start builds and compiles the model
  (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 1
done

wyoming-bench tts "127.0.0.1:$port" --mode both --rounds 3 --warmup 1 \
  --texts "Good morning. The kitchen lights are on." \
          "The washing machine has finished. The living room is at twenty-one degrees, and it will rain after four."
python tools/load_rooms.py --uri "tcp://127.0.0.1:$port" --rooms 1,2,4,8,16 --requests 2
python tools/load_rooms.py --uri "tcp://127.0.0.1:$port" --rooms 1,4,16 --requests 1 --stream
